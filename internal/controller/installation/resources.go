package installation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/readiness"
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
// covered them (readiness.Resources).
func (s *scope) observeResources(h target.Health, covered []v1alpha1.ObjectReference) {
	s.inst.Status.Resources = readiness.Resources(s.artifact.resources, s.inst.Status.Resources, h, covered)
}
