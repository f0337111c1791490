// Package news decides what a person watching an installation is told:
// which changes of where it stands (its Ready condition, the gate it
// waits at, the change it waits with) are news worth an Event, and how
// the Event of an applied revision and those of its transitions combine.
// It takes values and returns the Events to record; the installation
// controller records them (and logs each), in finish, once per reconcile.
// A reconcile that changes nothing is no news.
package news

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Standing is where an installation stands, as its status says: what
// Transitions compares.
type Standing struct {
	Ready   metav1.Condition // the Ready condition (zero when absent)
	Waiting string           // GateApproval, GateHooks or ""
	Digest  string           // status.change.digest
}

// StandingOf is where inst stands.
func StandingOf(inst *v1alpha1.ExtensionInstallation) Standing {
	var st Standing
	if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		st.Ready = *c
	}
	switch approval, hooks := Waiting(inst); {
	case approval:
		st.Waiting = GateApproval
	case hooks:
		st.Waiting = GateHooks
	}
	if inst.Status.Change != nil {
		st.Digest = inst.Status.Change.Digest
	}
	return st
}

// The gates an installation can wait at (Standing.Waiting; the gate label
// of the annex_installations_waiting metric).
const (
	GateApproval = "approval"
	GateHooks    = "hooks"
)

// Waiting reports whether an installation's pending change (status.change)
// waits for an Approval, and whether it waits for hooks to answer.
func Waiting(inst *v1alpha1.ExtensionInstallation) (approval, hooks bool) {
	c := inst.Status.Change
	if c == nil {
		return false, false
	}
	approval = c.Approval != nil && c.Approval.State == v1alpha1.ApprovalPending
	hooks = c.Hooks != nil && c.Hooks.State == v1alpha1.HookPending
	return approval, hooks
}

// Note is one Event to record.
type Note struct{ Type, Reason, Message string }

// Kind is how a reconcile that did not finish ended.
type Kind int

const (
	// Terminal: a person must change something.
	Terminal Kind = iota
	// Retry: a transient failure, retried with backoff.
	Retry
	// Wait: nothing is wrong; the installation waits.
	Wait
	// Stalled: waited past its timeout; still polled.
	Stalled
)

// Stop is how a reconcile ended when it did not finish: its kind, and
// the reason and message of its conditions.
type Stop struct {
	Kind            Kind
	Reason, Message string
}

// Error is the message: a stop is also an error, so that a terminal one
// can be returned as reconcile.TerminalError and a retried one to back
// off.
func (s *Stop) Error() string { return s.Message }

// Transitions returns the Events that tell how a reconcile moved an
// installation from before to after, given how it ended (stop, nil when
// it did not stop):
//   - it became Ready (again): Normal Ready;
//   - it stopped on a failure (terminal, stalled or retried) it was
//     not already stopped on: Warning with the stop's reason; a
//     terminal stop counts as new when its message changed too, since
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
func Transitions(before, after Standing, generation int64, stop *Stop) []Note {
	var out []Note
	readyNow := after.Ready.Status == metav1.ConditionTrue && after.Ready.ObservedGeneration == generation
	readyBefore := before.Ready.Status == metav1.ConditionTrue && before.Ready.ObservedGeneration == generation
	if readyNow && !readyBefore {
		out = append(out, Note{corev1.EventTypeNormal, ReasonBecameReady, after.Ready.Message})
	}
	if stop == nil {
		return out
	}
	switch stop.Kind {
	case Terminal:
		if before.Ready.Reason != stop.Reason || before.Ready.Message != stop.Message {
			out = append(out, Note{corev1.EventTypeWarning, stop.Reason, stop.Message})
		}
	case Stalled, Retry:
		if before.Ready.Reason != stop.Reason {
			out = append(out, Note{corev1.EventTypeWarning, stop.Reason, stop.Message})
		}
	case Wait:
		if !newsWhileWaiting[stop.Reason] || (after.Waiting == before.Waiting && after.Digest == before.Digest && before.Ready.Reason == stop.Reason) {
			break
		}
		eventType := corev1.EventTypeNormal
		if stop.Reason == v1alpha1.ReasonApprovalRefused {
			eventType = corev1.EventTypeWarning
		}
		out = append(out, Note{eventType, stop.Reason, stop.Message})
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

// Of is what one reconcile tells: the revision it applied, if it
// applied one, then its transitions. An installation that became Ready
// in the reconcile that applied its revision is told in one Event, the
// apply's, which then says it is Ready too: one change, one Event (each
// Event is a write to the API server).
func Of(applied *Note, trans []Note) []Note {
	if applied == nil {
		return trans
	}
	out := []Note{*applied}
	for _, n := range trans {
		if n.Reason == ReasonBecameReady {
			out[0].Message += "; " + n.Message
			continue
		}
		out = append(out, n)
	}
	return out
}

// ReasonBecameReady is the reason of the Event told when an installation
// becomes Ready.
const ReasonBecameReady = "Ready"

// RevisionOf is the revision inst is at, which every Event's log line
// carries: the one being applied (status.pending), else the last
// recorded, else 0.
func RevisionOf(inst *v1alpha1.ExtensionInstallation) int64 {
	switch {
	case inst.Status.Pending != nil:
		return inst.Status.Pending.Number
	case len(inst.Status.History) > 0:
		return inst.Status.History[0].Number
	}
	return 0
}
