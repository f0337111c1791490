package readiness

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/target"
)

// Resources is status.resources for resources (spec.resources as the
// engine placed them) from h, a health read that covered the refs
// covered: each resource is ready unless h lists it, and then it carries
// its own message; one not created yet waits for its operator. A resource
// h did not cover keeps its state in previous (the status as it was).
func Resources(resources []v1alpha1.ObjectReference, previous []v1alpha1.ResourceStatus, h target.Health, covered []v1alpha1.ObjectReference) []v1alpha1.ResourceStatus {
	if len(resources) == 0 {
		return nil
	}
	inCovered := map[string]bool{}
	for _, ref := range covered {
		inCovered[target.RefKey(ref)] = true
	}
	notReady := map[string]target.ObjectHealth{}
	for _, o := range h.NotReady {
		notReady[target.RefKey(o.Object)] = o
	}
	before := map[string]v1alpha1.ResourceStatus{}
	for _, st := range previous {
		before[st.Kind+"/"+st.Namespace+"/"+st.Name] = st
	}
	statuses := make([]v1alpha1.ResourceStatus, 0, len(resources))
	for _, ref := range resources {
		apiVersion := ref.Version
		if ref.Group != "" {
			apiVersion = ref.Group + "/" + ref.Version
		}
		st := v1alpha1.ResourceStatus{
			APIVersion: apiVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
			Ready: metav1.ConditionUnknown, Message: "not created yet: it is created once the operator is up",
		}
		key := target.RefKey(ref)
		switch o, pending := notReady[key]; {
		case !inCovered[key]:
			if prev, ok := before[ref.Kind+"/"+ref.Namespace+"/"+ref.Name]; ok {
				st = prev
			}
		case !pending:
			st.Ready, st.Message = metav1.ConditionTrue, ""
		case o.Status == "NotFound":
			st.Message = o.Message
		default:
			st.Ready, st.Message = metav1.ConditionFalse, o.Message
		}
		statuses = append(statuses, st)
	}
	return statuses
}
