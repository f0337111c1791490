package installation

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/metrics"
)

// What a person watching an installation is told: every Event is also a
// log line carrying the installation, its cluster and its revision, so
// that `kubectl events` and the manager's logs tell the same story.
// Events are recorded where something happens (an apply, a rollback, a
// drift correction, an uninstall) and, in finish, when the reconcile
// changed where the installation stands (transitions); a reconcile that
// changes nothing records nothing.

// standing is where an installation stands, as its status says: what
// transitions compares.
type standing struct {
	ready   metav1.Condition // the Ready condition (zero when absent)
	waiting string           // metrics.GateApproval, metrics.GateHooks or ""
	digest  string           // status.change.digest
}

func standingOf(inst *v1alpha1.ExtensionInstallation) standing {
	var st standing
	if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		st.ready = *c
	}
	switch approval, hooks := metrics.Waiting(inst); {
	case approval:
		st.waiting = metrics.GateApproval
	case hooks:
		st.waiting = metrics.GateHooks
	}
	if inst.Status.Change != nil {
		st.digest = inst.Status.Change.Digest
	}
	return st
}

// note is one Event to record.
type note struct{ eventType, reason, message string }

// transitions returns the Events that tell how a reconcile moved an
// installation from before to after, given how it ended (b, nil when it
// did not block):
//   - it became Ready (again): Normal Ready;
//   - it stopped on a failure (terminal, stalled or retried block) it was
//     not already stopped on: Warning with the block's reason; a
//     terminal block counts as new when its message changed too, since
//     that is another problem of the same kind;
//   - its change began to wait for an Approval or for hooks (or the
//     change waiting is a new one): Normal ApprovalRequired or
//     HookPending (Warning ApprovalRefused when the only Approvals do not
//     count);
//   - its deletion began to be held by installations that need it:
//     Normal DeletionHeld.
//
// Everything else (waiting for dependencies or health, a retry of the
// same failure) is no news.
func transitions(before, after standing, generation int64, b *block) []note {
	var out []note
	readyNow := after.ready.Status == metav1.ConditionTrue && after.ready.ObservedGeneration == generation
	readyBefore := before.ready.Status == metav1.ConditionTrue && before.ready.ObservedGeneration == generation
	if readyNow && !readyBefore {
		out = append(out, note{corev1.EventTypeNormal, reasonBecameReady, after.ready.Message})
	}
	if b == nil {
		return out
	}
	switch b.kind {
	case blockTerminal:
		if before.ready.Reason != b.reason || before.ready.Message != b.message {
			out = append(out, note{corev1.EventTypeWarning, b.reason, b.message})
		}
	case blockStalled, blockRetry:
		if before.ready.Reason != b.reason {
			out = append(out, note{corev1.EventTypeWarning, b.reason, b.message})
		}
	case blockWait:
		if !newsWhileWaiting[b.reason] || (after.waiting == before.waiting && after.digest == before.digest && before.ready.Reason == b.reason) {
			break
		}
		eventType := corev1.EventTypeNormal
		if b.reason == v1alpha1.ReasonApprovalRefused {
			eventType = corev1.EventTypeWarning
		}
		out = append(out, note{eventType, b.reason, b.message})
	}
	return out
}

// newsWhileWaiting are the reasons of waits a person may have to act on.
var newsWhileWaiting = map[string]bool{
	v1alpha1.ReasonApprovalRequired: true,
	v1alpha1.ReasonApprovalRefused:  true,
	v1alpha1.ReasonHookPending:      true,
	v1alpha1.ReasonDeletionHeld:     true,
}

// announce records what this reconcile applied (s.report.applied) and its
// transitions, except those a step already told with the same reason (a
// rollback, for one, records RolledBack where it happens and then stops
// on it).
func (r *Reconciler) announce(s *scope) {
	for _, n := range news(s.report.applied, transitions(s.report.before, standingOf(s.inst), s.inst.Generation, s.block)) {
		if !s.report.told[n.reason] {
			r.event(s, n.eventType, n.reason, n.message)
		}
	}
}

// news is what one reconcile tells: the revision it applied, if it
// applied one, then its transitions. An installation that became Ready
// in the reconcile that applied its revision is told in one Event, the
// apply's, which then says it is Ready too: one change, one Event (each
// Event is a write to the API server).
func news(applied *note, trans []note) []note {
	if applied == nil {
		return trans
	}
	out := []note{*applied}
	for _, n := range trans {
		if n.reason == reasonBecameReady {
			out[0].message += "; " + n.message
			continue
		}
		out = append(out, n)
	}
	return out
}

// reasonBecameReady is the reason of the Event told when an installation
// becomes Ready.
const reasonBecameReady = "Ready"

// event records an Event on the installation and logs it with the
// installation's keys (s.report.log) and its revision.
func (r *Reconciler) event(s *scope, eventType, reason, message string) {
	if s.report.told == nil {
		s.report.told = map[string]bool{}
	}
	s.report.told[reason] = true
	s.report.log.Info(message, "event", reason, "type", eventType, "revision", revisionOf(s.inst), "version", s.inst.Status.InstalledVersion)
	if r.Events == nil {
		return
	}
	r.Events.Eventf(s.inst, nil, eventType, reason, "Reconcile", "%s", message)
}

// revisionOf is the revision an installation is at: the one being
// applied, else the last recorded, else 0.
func revisionOf(inst *v1alpha1.ExtensionInstallation) int64 {
	switch {
	case inst.Status.Pending != nil:
		return inst.Status.Pending.Number
	case len(inst.Status.History) > 0:
		return inst.Status.History[0].Number
	}
	return 0
}

// begin makes the scope of one reconcile, with a logger carrying the
// installation ("namespace/name") and its cluster ("hub" for the hub);
// the returned context carries it too, so that every log line of the
// reconcile has them.
func (r *Reconciler) begin(ctx context.Context, inst *v1alpha1.ExtensionInstallation) (context.Context, *scope) {
	s := newScope(inst)
	s.report.log = log.FromContext(ctx).WithValues("installation", nameOf(inst), "cluster", metrics.ClusterLabel(inst.Spec.Cluster))
	return log.IntoContext(ctx, s.report.log), s
}
