package managedcluster

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// note is one Event to record on a ManagedCluster.
type note struct{ eventType, reason, message string }

// transitions returns the Events that tell how a status write moved a
// cluster from before to after:
//   - it became reachable (first probe, or back): Normal Reachable;
//   - it stopped being reachable: Warning Unreachable, with why;
//   - its Kubernetes version changed: Normal KubernetesVersionChanged
//     (its installations are resolved again);
//   - its deletion began removing its installations: Normal
//     Uninstalling.
//
// Recounting installations or probing again with the same result
// records nothing.
func transitions(before, after v1alpha1.ManagedClusterStatus) []note {
	var out []note
	was := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionReachable)
	now := meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionReachable)
	switch {
	case now == nil:
	case now.Status == metav1.ConditionTrue && (was == nil || was.Status != metav1.ConditionTrue):
		out = append(out, note{corev1.EventTypeNormal, "Reachable", now.Message})
	case now.Status == metav1.ConditionFalse && (was == nil || was.Status != metav1.ConditionFalse):
		out = append(out, note{corev1.EventTypeWarning, "Unreachable", now.Message})
	}
	if before.KubernetesVersion != "" && after.KubernetesVersion != before.KubernetesVersion {
		out = append(out, note{corev1.EventTypeNormal, "KubernetesVersionChanged", fmt.Sprintf(
			"Kubernetes %s → %s; the installations on the cluster are resolved again", before.KubernetesVersion, after.KubernetesVersion)})
	}
	readyWas := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionReady)
	readyNow := meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionReady)
	if readyNow != nil && readyNow.Reason == v1alpha1.ReasonUninstalling && (readyWas == nil || readyWas.Reason != v1alpha1.ReasonUninstalling) {
		out = append(out, note{corev1.EventTypeNormal, v1alpha1.ReasonUninstalling, readyNow.Message})
	}
	return out
}
