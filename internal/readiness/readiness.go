// Package readiness computes an ExtensionInstallation's summary
// conditions (Ready, Reconciling, Stalled) and its observedGeneration
// from how a reconcile ended: a pure function over the installation and
// the outcome, table-tested without an API server. Ready is set nowhere
// else; the installation controller calls Summarize once, before its
// status write. Resources is status.resources, which Ready's message
// names.
package readiness

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

// Outcome is how a reconcile ended.
type Outcome struct {
	Suspended bool // spec.suspend is true
	Healthy   bool // every applied object is healthy
	// Stop is why it could not go on (news.Stop: terminal, retry, wait or
	// stalled, with the conditions' reason and message); nil when nothing
	// stopped it.
	Stop *news.Stop
	// Err is the error it returned; without a Stop it counts as a retry
	// (reason Progressing).
	Err error
}

// Summarize sets Ready, Reconciling and Stalled on inst from o.
// observedGeneration moves only when the reconcile succeeded (or the
// installation is suspended) or ended in a terminal block. A reconcile
// with neither a block nor a healthy outcome (an uninstall going on,
// nothing decided yet) leaves them as they are.
func Summarize(inst *v1alpha1.ExtensionInstallation, o Outcome) {
	b := o.Stop
	if b == nil && o.Err != nil {
		b = &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonProgressing, Message: o.Err.Error()}
	}
	switch {
	case o.Suspended:
		Set(inst, v1alpha1.ConditionReconciling, metav1.ConditionFalse, v1alpha1.ReasonSuspended, "spec.suspend is true: Annex leaves the installed objects as they are; set spec.suspend to false to reconcile it again")
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionStalled)
		inst.Status.ObservedGeneration = inst.Generation
	case b == nil && o.Healthy:
		msg := fmt.Sprintf("%s %s is installed and healthy (%d objects)", inst.Spec.Extension, inst.Status.InstalledVersion, len(inst.Status.Inventory))
		if len(inst.Status.Resources) > 0 {
			msg += resourcesSummary(inst.Status.Resources)
		}
		Set(inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, msg)
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionReconciling)
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionStalled)
		inst.Status.ObservedGeneration = inst.Generation
	case b == nil:
	case b.Kind == news.Terminal || b.Kind == news.Stalled:
		Set(inst, v1alpha1.ConditionReady, metav1.ConditionFalse, b.Reason, b.Message)
		Set(inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, b.Reason, b.Message)
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionReconciling)
		if b.Kind == news.Terminal {
			inst.Status.ObservedGeneration = inst.Generation
		}
	default:
		Set(inst, v1alpha1.ConditionReady, metav1.ConditionFalse, b.Reason, b.Message)
		Set(inst, v1alpha1.ConditionReconciling, metav1.ConditionTrue, b.Reason, b.Message)
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionStalled)
	}
}

// Set records a condition for inst's current generation.
func Set(inst *v1alpha1.ExtensionInstallation, conditionType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&inst.Status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: inst.Generation,
	})
}

// IsReady reports whether inst's Ready condition is True for its current
// generation.
func IsReady(inst *v1alpha1.ExtensionInstallation) bool {
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == inst.Generation
}

// resourcesSummary names, for Ready's message, the resources of
// spec.resources, every one ready.
func resourcesSummary(statuses []v1alpha1.ResourceStatus) string {
	names := make([]string, 0, len(statuses))
	for _, st := range statuses {
		name := st.Name
		if st.Namespace != "" {
			name = st.Namespace + "/" + st.Name
		}
		names = append(names, fmt.Sprintf("%s %s", st.Kind, name))
	}
	if len(names) == 1 {
		return fmt.Sprintf("; its resource %s is ready", names[0])
	}
	return fmt.Sprintf("; its %d resources are ready: %s", len(names), strings.Join(names, ", "))
}
