package installation

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/target"
)

// resourceRefs are the inventory entries of the plan's resources step.
func (s *scope) resourceRefs(objs []*unstructured.Unstructured) []v1alpha1.ObjectReference {
	if len(objs) == 0 {
		return nil
	}
	return s.target.Applier().Refs(objs, s.targetNamespace())
}

// observeResources sets status.resources from h, a health read that
// covered them: each resource is ready unless h lists it, and then it
// carries its own message. Resources h did not cover keep their state.
func (s *scope) observeResources(h target.Health, covered []v1alpha1.ObjectReference) {
	if len(s.artifact.resources) == 0 {
		s.inst.Status.Resources = nil
		return
	}
	inCovered := map[string]bool{}
	for _, ref := range covered {
		inCovered[target.RefKey(ref)] = true
	}
	notReady := map[string]target.ObjectHealth{}
	for _, o := range h.NotReady {
		notReady[target.RefKey(o.Object)] = o
	}
	previous := map[string]v1alpha1.ResourceStatus{}
	for _, st := range s.inst.Status.Resources {
		previous[st.Kind+"/"+st.Namespace+"/"+st.Name] = st
	}
	statuses := make([]v1alpha1.ResourceStatus, 0, len(s.artifact.resources))
	for _, ref := range s.artifact.resources {
		st := v1alpha1.ResourceStatus{
			APIVersion: apiVersionOf(ref), Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
			Ready: metav1.ConditionUnknown, Message: "not created yet: it is created once the operator is up",
		}
		key := target.RefKey(ref)
		switch o, pending := notReady[key]; {
		case !inCovered[key]:
			if prev, ok := previous[ref.Kind+"/"+ref.Namespace+"/"+ref.Name]; ok {
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
	s.inst.Status.Resources = statuses
}

func apiVersionOf(ref v1alpha1.ObjectReference) string {
	if ref.Group == "" {
		return ref.Version
	}
	return ref.Group + "/" + ref.Version
}
