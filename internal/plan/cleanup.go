package plan

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// A package's cleanup plan runs when its installation is deleted, before
// the inventory is removed (KUDO's order), with the same driver as its
// other plans, resumed across reconciles from its status.

// CleanupTrigger marks the cleanup plan's run on deletion.
const CleanupTrigger = "deletion"

// Cleanup is what to do with a package's cleanup plan on deletion.
type Cleanup int

const (
	// CleanupRun: run it from its status (started, or restarted on a run
	// request after a FATAL_ERROR).
	CleanupRun Cleanup = iota
	// CleanupAbandon: an abandon request stops it; uninstalling goes on.
	CleanupAbandon
)

// CleanupNext decides, from the cleanup plan's status st (already started
// for the deletion: its trigger is CleanupTrigger) and the installation's
// run and abandon requests (nil when there is none), what the deletion
// does with it, the status it runs from (or ends in), and the requests it
// acted on (nil when it did not), which are to be marked done: a run
// request restarts a plan that failed fatally, an abandon request stops
// one that runs.
func CleanupNext(cleanup Plan, st v1alpha1.PlanStatus, run, abandon *v1alpha1.PlanRequest, now metav1.Time) (next Cleanup, from v1alpha1.PlanStatus, ran, abandoned *v1alpha1.PlanRequest) {
	if run != nil && run.Name == cleanup.Name && st.State == v1alpha1.PlanFatalError {
		st, ran = Start(cleanup, CleanupTrigger, st.Revision, now), run
	}
	if abandon != nil && abandon.Name == cleanup.Name && Running(st.State) {
		return CleanupAbandon, Abandon(st, "abandoned by request "+abandon.ID, now), ran, abandon
	}
	return CleanupRun, st, ran, nil
}

// CleanupPort is what running the cleanup plan asks of the world beyond
// the driver's Port.
type CleanupPort interface {
	Port
	// Enlist adds what p may apply to the installation's inventory
	// before p first runs, so that the uninstall removes it too.
	Enlist(p Plan)
	// Prepare readies the target before every pass (it applies the target
	// namespace the plan runs in); false holds the deletion, having said
	// why.
	Prepare() (bool, error)
}

// CleanupOutcome is where the cleanup plan's run ended in one pass.
type CleanupOutcome struct {
	// Done: the plan completed, or Abandoned (by that request, in this
	// pass, when not nil); the uninstall goes on.
	Done      bool
	Abandoned *v1alpha1.PlanRequest
	// Reason and Message say, when not done, why the deletion waits, and
	// Polls how many poll intervals until the next pass; all empty when
	// Prepare held it or an error stopped it.
	Reason, Message string
	Polls           int
}

// RunCleanup runs cleanup, the installed revision's cleanup plan, for
// the deletion of inst as far as it goes in this pass: started (and its
// objects enlisted, and the start saved) the first time, restarted by a
// run request after a FATAL_ERROR, stopped by an abandon request
// (CleanupNext), or driven from its status (DriveOne). It is done when
// COMPLETE or abandoned; a FATAL_ERROR holds the deletion until a person
// fixes the cause or abandons the plan. The requests it carries out are
// marked in inst's status; an error is the port's.
func RunCleanup(inst *v1alpha1.ExtensionInstallation, cleanup Plan, port CleanupPort) (CleanupOutcome, error) {
	st := StatusOf(inst.Status.Plans, cleanup.Name)
	if st == nil || st.Trigger != CleanupTrigger {
		var revision int64
		if len(inst.Status.History) > 0 {
			revision = inst.Status.History[0].Number
		}
		port.Enlist(cleanup)
		SetStatus(&inst.Status.Plans, Start(cleanup, CleanupTrigger, revision, port.Now()))
		if err := port.Save(); err != nil {
			return CleanupOutcome{}, err
		}
		st = StatusOf(inst.Status.Plans, cleanup.Name)
	}
	action, from, ran, abandoned := CleanupNext(cleanup, *st, RunRequest(inst), AbandonRequest(inst), port.Now())
	if ran != nil {
		MarkRequest(inst, ran, nil)
	}
	if action == CleanupAbandon {
		MarkRequest(inst, nil, abandoned)
		SetStatus(&inst.Status.Plans, from)
		return CleanupOutcome{Done: true, Abandoned: abandoned}, nil
	}
	if ok, err := port.Prepare(); !ok || err != nil {
		return CleanupOutcome{}, err
	}
	next, waiting, err := DriveOne(cleanup, from, &inst.Status.Plans, port)
	switch {
	case err != nil:
		return CleanupOutcome{}, err
	case waiting:
		return CleanupOutcome{Reason: v1alpha1.ReasonUninstalling, Message: fmt.Sprintf("plan %s: %s", cleanup.Name, next.Message), Polls: 1}, nil
	case next.State == v1alpha1.PlanFatalError:
		return CleanupOutcome{Reason: v1alpha1.ReasonCleanupFailed, Polls: 30, Message: fmt.Sprintf(
			"plan %s failed: %s; the installation is kept until it completes: fix the cause and run annexctl plan run %s, or abandon it with annexctl plan abandon %s to remove the objects anyway",
			cleanup.Name, next.Message, cleanup.Name, cleanup.Name)}, nil
	}
	return CleanupOutcome{Done: true}, nil
}
