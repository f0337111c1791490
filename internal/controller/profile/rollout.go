package profile

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/rollout"
)

// rolloutConditions sets Progressing, Halted and Complete from the
// rollout's state (kstatus: Progressing while it moves, Halted when it
// stopped for good).
func rolloutConditions(p *v1alpha1.ExtensionProfile, st v1alpha1.RolloutStatus) {
	set := func(t string, on bool, reason string) {
		status := metav1.ConditionFalse
		if on {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason,
			Message: st.Message, ObservedGeneration: p.Generation})
	}
	reason := string(st.Phase)
	switch st.Phase {
	case v1alpha1.RolloutComplete:
		set(v1alpha1.ConditionProgressing, false, reason)
		set(v1alpha1.ConditionHalted, false, reason)
		set(v1alpha1.ConditionComplete, true, reason)
	case v1alpha1.RolloutHalted, v1alpha1.RolloutRollingBack, v1alpha1.RolloutRolledBack:
		haltReason, _, _ := strings.Cut(st.HaltReason, ":")
		set(v1alpha1.ConditionProgressing, st.Phase == v1alpha1.RolloutRollingBack, reason)
		set(v1alpha1.ConditionHalted, true, haltReason)
		set(v1alpha1.ConditionComplete, false, reason)
	default:
		set(v1alpha1.ConditionProgressing, true, reason)
		set(v1alpha1.ConditionHalted, false, reason)
		set(v1alpha1.ConditionComplete, false, reason)
	}
}

// record writes one of the rollout's events on the profile and in the log.
func (r *Reconciler) record(ctx context.Context, p *v1alpha1.ExtensionProfile, e rollout.Event) {
	log.FromContext(ctx).Info(e.Message, "event", e.Reason, "profile", p.Name)
	if r.Events == nil {
		return
	}
	kind := corev1.EventTypeNormal
	if e.Warning {
		kind = corev1.EventTypeWarning
	}
	r.Events.Eventf(p, nil, kind, e.Reason, "Rollout", "%s", e.Message)
}

// revisionMade records a new revision, and the emergency override of
// maintenance windows when it carries one.
func (r *Reconciler) revisionMade(ctx context.Context, p *v1alpha1.ExtensionProfile, number int64, data *v1alpha1.ProfileRevisionData) {
	var exts []string
	for _, e := range data.Extensions {
		exts = append(exts, e.Name+"@"+firstNonEmpty(e.Target, e.Version))
	}
	r.record(ctx, p, rollout.Event{Reason: "RevisionCreated", Message: fmt.Sprintf("revision %d: %s", number, strings.Join(exts, ", "))})
	if data.IgnoreMaintenanceWindows {
		r.record(ctx, p, rollout.Event{Warning: true, Reason: "MaintenanceWindowsIgnored",
			Message: fmt.Sprintf("revision %d changes clusters outside their maintenance windows (spec.rollout.ignoreMaintenanceWindows)", number)})
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// stepApprovalState answers Decide's questions about approvals of
// one revision's steps.
type stepApprovalState struct {
	byStep map[string]gate.StepDecision
}

func (s stepApprovalState) approved(step string) bool {
	return s.byStep[step].State == v1alpha1.ApprovalApproved
}

func (s stepApprovalState) denied(step string) (bool, string) {
	d := s.byStep[step]
	if d.State != v1alpha1.ApprovalDenied {
		return false, ""
	}
	return true, fmt.Sprintf("%s denied it: %s", d.DeniedBy, firstNonEmpty(d.DenialReason, "no reason given"))
}

// refused says why Approvals of step do not count, "" when none was refused.
func (s stepApprovalState) refused(step string) string {
	return strings.Join(s.byStep[step].Refused, "; ")
}

// stepApprovals reads the Approvals of revision rev in p's namespace.
// Whoever changed the profile when the revision was made (recorded on
// the revision) cannot approve its steps; pausing or resuming later does
// not make someone else that requester.
func (r *Reconciler) stepApprovals(ctx context.Context, p *v1alpha1.ExtensionProfile, rev revision) (stepApprovalState, error) {
	out := stepApprovalState{byStep: map[string]gate.StepDecision{}}
	if p.Spec.Rollout == nil {
		return out, nil
	}
	var list v1alpha1.ApprovalList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespaceOf(p))); err != nil {
		return out, err
	}
	for _, s := range p.Spec.Rollout.Steps {
		if s.RequireApproval {
			out.byStep[s.Name] = gate.StepApproval(list.Items, p.Name, rev.number, s.Name, rev.requester)
		}
	}
	return out, nil
}
