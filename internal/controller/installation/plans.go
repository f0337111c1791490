package installation

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/target"
)

// runPackage carries out the plans of a package (plan.Revise: an abandon
// request, a new revision, the steps the executor offers, recording the
// revision); revisionPort does its I/O. When nothing runs, drift is
// checked as for a chart.
func (r *Reconciler) runPackage(ctx context.Context, s *scope) (ctrl.Result, error) {
	run := s.artifact.run
	out, err := plan.Revise(plan.RevisionInput{
		Inst: s.inst, Plans: run.plans, Resuming: resuming(s), Trigger: run.trigger, Request: run.request,
		Params: run.params, Cleanup: run.cleanup, Namespace: run.namespace,
	}, revisionPort{r.planPort(ctx, s)})
	if out.Settled {
		s.applied.inventory = s.inst.Status.Inventory
	}
	switch {
	case err != nil:
		return ctrl.Result{}, ignoreRefused(err)
	case out.Stop != nil && out.Installed:
		return r.stop(s, out.Stop, ctrl.Result{RequeueAfter: time.Duration(out.Polls) * r.pollInterval()})
	case out.Stop != nil:
		s.block = out.Stop
	case out.CheckDrift:
		return r.checkDrift(ctx, s, target.Set{Objects: out.Drift})
	}
	return ctrl.Result{}, nil
}

// resuming reports whether the rendered plans are the pending revision's
// (plan.Resumes) and no run request asks for a new run.
func resuming(s *scope) bool {
	return s.artifact.run.request == nil && plan.Resumes(s.inst.Status.Pending, s.choice.Version.Version, s.artifact.digest,
		s.artifact.release.ValuesDigest, s.artifact.run.plans)
}

// planPort is the installation's side of the plan driver: its applier
// runs the tasks (runStep), its status is saved (persist), and Events
// tell when a plan starts and finishes.
type planPort struct {
	ctx context.Context
	r   *Reconciler
	s   *scope
}

func (r *Reconciler) planPort(ctx context.Context, s *scope) planPort {
	return planPort{ctx: ctx, r: r, s: s}
}

func (p planPort) RunStep(step plan.Step) plan.StepResult { return p.r.runStep(p.ctx, p.s, step) }
func (p planPort) Save() error                            { return p.r.persist(p.ctx, p.s) }
func (p planPort) Now() metav1.Time                       { return metav1.NewTime(p.r.now()) }
func (p planPort) Finished(st v1alpha1.PlanStatus)        { p.r.planFinished(p.s, st) }
func (p planPort) Started(pl plan.Plan, st v1alpha1.PlanStatus) {
	p.r.event(p.s, "Normal", "PlanStarted", fmt.Sprintf("plan %s started (revision %d, %s)", pl.Name, st.Revision, st.Trigger))
}

// applyOnePass runs p, a release's one-pass plan (Release.OnePass), with
// the installation's applier in this reconcile (plan.OnePass). It returns
// what the steps applied, the state p ended in (nil when the applier
// refused p before any step) and the first step's error.
func (r *Reconciler) applyOnePass(ctx context.Context, s *scope, p plan.Plan, opts target.ApplyOptions) (target.Applied, *v1alpha1.PlanStatus, error) {
	steps, err := s.target.Applier().Start(s.owner(), s.targetNamespace(), p, opts)
	if err != nil {
		return target.Applied{}, nil, err
	}
	st, stepErr := plan.OnePass(p, func(ref plan.StepRef) error { return steps.Step(ctx, ref) }, func() metav1.Time { return metav1.Now() })
	return steps.Applied(), &st, stepErr
}

// planFinished counts a plan that ended in st and tells it
// (plan.FinishedMessage).
func (r *Reconciler) planFinished(s *scope, st v1alpha1.PlanStatus) {
	metrics.ObservePlan(s.choice.Version.Engine, st)
	eventType := "Normal"
	warning, msg := plan.FinishedMessage(st)
	if warning {
		eventType = "Warning"
	}
	r.event(s, eventType, "PlanFinished", msg)
}

// revisionPort is planPort for a package's revisions (plan.RevisionPort):
// its records, its applier's references and the target namespace.
type revisionPort struct{ planPort }

func (p revisionPort) Installed() ([]*unstructured.Unstructured, []byte, bool, error) {
	prev, found, err := p.r.records(p.s).Installed(p.ctx)
	return prev.Objects, prev.Package, found, err
}

func (p revisionPort) Key(o *unstructured.Unstructured) string {
	return target.RefKey(p.s.target.Applier().Refs([]*unstructured.Unstructured{o}, p.s.targetNamespace())[0])
}

func (p revisionPort) Refs(objs []*unstructured.Unstructured) []v1alpha1.ObjectReference {
	refs, _ := target.UnionRefs(nil, p.s.target.Applier().Refs(objs, p.s.targetNamespace()))
	return refs
}

func (p revisionPort) Next() v1alpha1.Revision { return p.r.nextRevision(p.s) }

func (p revisionPort) WriteIntent(rev *v1alpha1.Revision, state []*unstructured.Unstructured, pkg []byte, everything []*unstructured.Unstructured) error {
	return p.r.writeIntentWith(p.ctx, p.s, rev, target.Set{Objects: state, Package: pkg}, everything)
}

func (p revisionPort) PrepareNamespace() *news.Stop {
	return p.r.ensureNamespace(p.ctx, p.s, p.s.artifact.run.namespace)
}

func (p revisionPort) Completed(rev v1alpha1.Revision) error {
	set, _, err := p.r.recordOf(p.ctx, p.s.inst, rev.Number)
	if err != nil {
		return err
	}
	if err := p.r.recordApplied(p.ctx, p.s, rev, set, p.s.target.Applier().Refs(set.Objects, p.s.targetNamespace())); err != nil {
		return err
	}
	p.r.adopted(p.s)
	return nil
}

func (p revisionPort) Stopped(rev v1alpha1.Revision) error {
	if err := p.r.trimRecords(p.ctx, p.s, rev.Number); err != nil {
		return err
	}
	p.r.record(p.s, p.s.inst.Status.Inventory, rev, "PlanStopped")
	return nil
}

func (p revisionPort) Observe(st v1alpha1.PlanStatus) {
	metrics.ObservePlan(p.s.choice.Version.Engine, st)
}
func (p revisionPort) Event(eventType, reason, message string) {
	p.r.event(p.s, eventType, reason, message)
}

// runCleanup runs the installed revision's cleanup plan, if its package
// has one, before the inventory is removed (plan.RunCleanup decides how
// far it goes); done false while it holds the deletion (s.block says why).
func (r *Reconciler) runCleanup(ctx context.Context, s *scope, installed target.Set) (ctrl.Result, bool, error) {
	cleanup := plan.DecodePackageRecord(installed.Package).Cleanup
	if cleanup == nil {
		return ctrl.Result{}, true, nil
	}
	port := &cleanupPort{planPort: r.planPort(ctx, s), namespace: target.NamespaceIn(installed.Objects, s.targetNamespace())}
	out, err := plan.RunCleanup(s.inst, *cleanup, port)
	switch {
	case err != nil || !out.Done && out.Reason == "":
		return port.res, false, err
	case out.Abandoned != nil:
		r.event(s, "Warning", "PlanAbandoned", fmt.Sprintf("plan %s abandoned by request %s; uninstalling goes on", cleanup.Name, out.Abandoned.ID))
	case !out.Done:
		s.block = wait(out.Reason, out.Message)
		return ctrl.Result{RequeueAfter: time.Duration(out.Polls) * r.pollInterval()}, false, nil
	}
	return ctrl.Result{}, true, nil
}

// cleanupPort is planPort for the cleanup plan (plan.CleanupPort): what
// the plan may apply joins the inventory, and the target namespace is
// there before every pass.
type cleanupPort struct {
	planPort
	namespace []*unstructured.Unstructured
	res       ctrl.Result
}

func (p *cleanupPort) Enlist(cleanup plan.Plan) {
	inst := p.s.inst
	inst.Status.Inventory, _ = target.UnionRefs(inst.Status.Inventory, p.s.target.Applier().Refs(plan.AllApplied([]plan.Plan{cleanup}), p.s.targetNamespace()))
	inst.Status.InventoryCount = int32(len(inst.Status.Inventory))
}

func (p *cleanupPort) Prepare() (bool, error) {
	b := p.r.ensureNamespace(p.ctx, p.s, p.namespace)
	if b == nil {
		return true, nil
	}
	p.s.block = b
	if b.Kind == blockRetry {
		return false, b
	}
	p.res = ctrl.Result{RequeueAfter: 30 * p.r.pollInterval()}
	return false, nil
}
