package plan

// A package's revisions: what one reconcile does with the plans of an
// installation whose release runs plans (Revise). It decides whether an
// abandon request stops the running plan, whether a new revision starts
// (its intent recorded before anything is applied), what each halt of the
// resumable driver means for the installation, and when a revision is
// recorded; the records, the applier and the status writes are behind
// RevisionPort, which the installation controller implements.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/values"
)

// RevisionPort is what a package's revisions ask of the installation
// beyond the driver's Port (whose Save writes the installation's status).
type RevisionPort interface {
	Port
	// Installed returns the installed revision's objects and its record's
	// package part; found false when there is none.
	Installed() (objects []*unstructured.Unstructured, pkg []byte, found bool, err error)
	// Key names an object as the inventory does (StateAfter's key), and
	// Refs returns the inventory's references to objs, each once.
	Key(o *unstructured.Unstructured) string
	Refs(objs []*unstructured.Unstructured) []v1alpha1.ObjectReference
	// Next is the revision that this reconcile's inputs make, numbered
	// after the history.
	Next() v1alpha1.Revision
	// WriteIntent records the intent of rev before any of its plans runs:
	// state is its set, pkg its record's package part, everything all its
	// plans may apply (its inventory).
	WriteIntent(rev *v1alpha1.Revision, state []*unstructured.Unstructured, pkg []byte, everything []*unstructured.Unstructured) error
	// PrepareNamespace applies the target namespace Annex creates before
	// the plans' steps run; a stop when it cannot.
	PrepareNamespace() *news.Stop
	// Completed records rev, whose plans all completed, as the installed
	// revision and prunes what the state they leave no longer holds.
	Completed(rev v1alpha1.Revision) error
	// Stopped records rev, whose plan stopped, as the installed revision
	// with the inventory as it is (reason PlanStopped).
	Stopped(rev v1alpha1.Revision) error
	// Observe counts a plan that ended in st.
	Observe(st v1alpha1.PlanStatus)
	// Event tells a person, as an Event of the installation.
	Event(eventType, reason, message string)
}

// RevisionInput is what this reconcile's inputs run of a release with
// plans.
type RevisionInput struct {
	// Inst is the installation: its status (pending revision, plans,
	// history, requests) is read and kept up to date.
	Inst *v1alpha1.ExtensionInstallation
	// Plans are the plans to run in this order; empty when nothing
	// changed. Resuming: they are the pending revision's (Resumes) and no
	// run request asks for a new run.
	Plans    []Plan
	Resuming bool
	// Trigger is why the plans run, and Request the spec.plans.run
	// request they carry out, if any.
	Trigger string
	Request *v1alpha1.PlanRequest
	// Params are what the plans were rendered with, Cleanup the rendered
	// cleanup plan (nil when none), kept in the record for the uninstall.
	Params  map[string]any
	Cleanup *Plan
	// Namespace holds the target namespace when Annex creates it.
	Namespace []*unstructured.Unstructured
}

// RevisionOutcome is where a package's revision stands after Revise.
type RevisionOutcome struct {
	// Stop holds the installation (nil: nothing holds it); with Installed
	// the Installed condition says it too, and Polls is how many poll
	// intervals a stop that is not retried waits.
	Stop      *news.Stop
	Installed bool
	Polls     int
	// Settled: no revision runs and one is installed; its inventory is
	// the installation's. CheckDrift: the cluster is compared with Drift,
	// what its plans left (Driftable).
	Settled    bool
	CheckDrift bool
	Drift      []*unstructured.Unstructured
}

// Revise carries out the plans of a package: an abandon request first,
// then a new revision when the inputs changed (its intent recorded
// before anything is applied), then the steps the executor offers, as far
// as they go in this reconcile (Advance). When every plan of the
// revision finished, the revision is recorded and what left the set is
// pruned; when nothing runs, drift is checked as for a chart. An error
// is the port's.
func Revise(in RevisionInput, port RevisionPort) (RevisionOutcome, error) {
	inst := in.Inst
	if req := AbandonRequest(inst); req != nil {
		if out, err := abandon(in, req, port); err != nil || out.Stop != nil {
			return out, err
		}
	}
	if len(in.Plans) > 0 && !in.Resuming {
		if err := startRevision(in, port); err != nil {
			return RevisionOutcome{}, err
		}
	}
	if inst.Status.Pending == nil {
		return settled(inst, port)
	}
	return advance(in, port)
}

// startRevision records the intent of a new revision running in.Plans
// (IntentOf): the state they leave is its set, and everything they may
// apply joins the inventory. A revision still pending is superseded: its
// running plan is marked ABANDONED.
func startRevision(in RevisionInput, port RevisionPort) error {
	inst := in.Inst
	prev, prevPackage, _, err := port.Installed()
	if err != nil {
		return err
	}
	intent, err := IntentOf(in.Namespace, prev, prevPackage, in.Plans, in.Params, in.Cleanup, port.Key)
	if err != nil {
		return err
	}
	rev := port.Next()
	rev.Plans, rev.Trigger = Names(in.Plans), in.Trigger
	rev.ManifestDigest, err = values.ManifestDigest(nil, intent.State)
	if err != nil {
		return err
	}
	if err := port.WriteIntent(&rev, intent.State, intent.Package, intent.Everything); err != nil {
		return err
	}
	Begin(&inst.Status.Plans, inst.Status.Pending, rev, in.Plans, port.Now())
	inst.Status.Pending = &rev
	if in.Request != nil {
		MarkRequest(inst, in.Request, nil)
	}
	return port.Save()
}

// advance runs the pending revision's plans with the resumable driver
// (Advance) as far as they go in this reconcile, and says what its halt
// means for the installation.
func advance(in RevisionInput, port RevisionPort) (RevisionOutcome, error) {
	rev := *in.Inst.Status.Pending
	if b := port.PrepareNamespace(); b != nil {
		out := RevisionOutcome{Stop: b, Installed: true}
		if b.Kind == news.Wait {
			out.Polls = 30
		}
		return out, nil
	}
	halt, p, st, err := Advance(in.Plans, rev, &in.Inst.Status.Plans, port)
	switch {
	case err != nil:
		return RevisionOutcome{}, err
	case halt == Waits:
		// The Installed condition says what the plan waits for.
		reason, message := WaitingCondition(p, st)
		return RevisionOutcome{Stop: &news.Stop{Kind: news.Wait, Reason: reason, Message: message}, Installed: true, Polls: 1}, nil
	case halt == Stopped:
		return stopped(in, rev, st, port)
	}
	return RevisionOutcome{}, port.Completed(rev)
}

// stopped records a revision whose plan stopped (FATAL_ERROR or
// abandoned): Annex does not run its plans again by itself, so the
// revision is recorded as the installed one, with everything its plans
// may have applied still in the inventory, and the Installed condition
// says what stopped and what to do.
func stopped(in RevisionInput, rev v1alpha1.Revision, st v1alpha1.PlanStatus, port RevisionPort) (RevisionOutcome, error) {
	if p := Find(in.Plans, st.Name); p != nil {
		st.LeftBehind = port.Refs(LeftBehind(*p, st))
		SetStatus(&in.Inst.Status.Plans, st)
	}
	if err := port.Stopped(rev); err != nil {
		return RevisionOutcome{}, err
	}
	reason, message := StoppedCondition(st)
	return RevisionOutcome{Stop: &news.Stop{Kind: news.Terminal, Reason: reason, Message: message}, Installed: true}, nil
}

// abandon carries out an abandon request: the named plan, if it runs,
// stops where it is (a stop); otherwise an Event says there was nothing
// to abandon.
func abandon(in RevisionInput, req *v1alpha1.PlanRequest, port RevisionPort) (RevisionOutcome, error) {
	abandoned := AbandonByRequest(in.Inst, req, port.Now())
	if abandoned == nil {
		port.Event(corev1.EventTypeNormal, "PlanAbandoned", fmt.Sprintf("request %s: plan %s is not running; nothing to abandon", req.ID, req.Name))
		return RevisionOutcome{}, nil
	}
	port.Observe(*abandoned)
	port.Event(corev1.EventTypeWarning, "PlanAbandoned", fmt.Sprintf("plan %s abandoned by request %s", req.Name, req.ID))
	return stopped(in, *in.Inst.Status.Pending, *abandoned, port)
}

// settled is a package whose plans are finished: the Installed condition
// follows the last revision's plans (a plan that did not complete keeps
// the installation stopped as that condition says), and drift is checked
// against the state they left.
func settled(inst *v1alpha1.ExtensionInstallation, port RevisionPort) (RevisionOutcome, error) {
	if len(inst.Status.History) == 0 {
		return RevisionOutcome{}, nil
	}
	out := RevisionOutcome{Settled: true}
	if Unfinished(inst.Status.Plans, inst.Status.History[0]) != nil {
		if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionInstalled); c != nil {
			out.Stop = &news.Stop{Kind: news.Terminal, Reason: c.Reason, Message: c.Message}
		}
		return out, nil
	}
	prev, _, found, err := port.Installed()
	if err != nil || !found {
		return out, err
	}
	out.CheckDrift, out.Drift = true, Driftable(prev)
	return out, nil
}
