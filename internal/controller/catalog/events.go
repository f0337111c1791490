package catalog

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// note is one Event to record on a Catalog.
type note struct{ eventType, reason, message string }

// transitions returns the Events that tell how a status write moved a
// catalog from before to after:
//   - new content was synced into Extensions (lastChangeTime moved and
//     Ready is True): Normal Synced, with the Ready message;
//   - Ready turned False for a new reason (FetchFailed, SourceInvalid,
//     Suspended): Warning with that reason (Normal for Suspended);
//   - the source became unreadable while the last good content is served
//     (FetchFailed turned True): Warning FetchFailed;
//   - it is readable again (FetchFailed went away): Normal FetchRecovered.
//
// A sync that finds what it found before writes no status, and so
// records nothing.
func transitions(before, after v1alpha1.CatalogStatus) []note {
	var out []note
	readyBefore := meta.FindStatusCondition(before.Conditions, v1alpha1.ConditionReady)
	readyAfter := meta.FindStatusCondition(after.Conditions, v1alpha1.ConditionReady)
	changed := after.LastChangeTime != nil && (before.LastChangeTime == nil || !before.LastChangeTime.Equal(after.LastChangeTime))
	switch {
	case readyAfter == nil:
	case readyAfter.Status == metav1.ConditionTrue && changed:
		out = append(out, note{corev1.EventTypeNormal, "Synced", readyAfter.Message})
	case readyAfter.Status == metav1.ConditionFalse && (readyBefore == nil || readyBefore.Status != metav1.ConditionFalse || readyBefore.Reason != readyAfter.Reason):
		eventType := corev1.EventTypeWarning
		if readyAfter.Reason == v1alpha1.ReasonSuspended {
			eventType = corev1.EventTypeNormal
		}
		out = append(out, note{eventType, readyAfter.Reason, readyAfter.Message})
	}
	failedBefore := meta.IsStatusConditionTrue(before.Conditions, ConditionFetchFailed)
	failedAfter := meta.FindStatusCondition(after.Conditions, ConditionFetchFailed)
	switch {
	case failedAfter != nil && failedAfter.Status == metav1.ConditionTrue && !failedBefore:
		out = append(out, note{corev1.EventTypeWarning, v1alpha1.ReasonFetchFailed, failedAfter.Message})
	case failedAfter == nil && failedBefore:
		out = append(out, note{corev1.EventTypeNormal, "FetchRecovered", "the source is readable again"})
	}
	return out
}
