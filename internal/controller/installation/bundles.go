package installation

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine/bundle"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/render"
)

// isBundle reports whether the chosen version is an OLM operator bundle.
func isBundle(s *scope) bool { return s.choice.Version.Engine == v1alpha1.EngineBundle }

// runsPlans reports whether the chosen version's engine runs its own plans
// across reconciles (packages and operator bundles); a chart's plan runs
// within one apply.
func runsPlans(s *scope) bool { return isPackage(s) || isBundle(s) }

// renderBundle converts the chosen bundle into its install plan for the
// install mode spec.watchNamespaces selects. What the bundle or the mode
// cannot support stops here, naming the field, before anything is
// applied. The plan runs when the inputs differ from the last revision's;
// it replaces everything an earlier revision applied, so what left the
// bundle is pruned.
func (r *Reconciler) renderBundle(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	ref := fmt.Sprintf("%s %s", inst.Spec.Extension, s.choice.Version.Version)
	start := time.Now()
	b, err := bundle.Load(s.bundle)
	if err != nil {
		return r.stop(s, terminal(v1alpha1.ReasonArtifactFailed, fmt.Sprintf(
			"%s: the artifact is not a registry+v1 bundle: %v; fix the bundle in its catalog or choose another version", ref, err)), ctrl.Result{})
	}
	install, err := convertBundle(b, s)
	if err != nil {
		// Convert is pure: what it refuses (an *UnsupportedError names the
		// CSV field, spec.watchNamespaces or spec.resources[i]) is refused
		// every time.
		return r.stop(s, terminal(v1alpha1.ReasonRenderFailed, fmt.Sprintf("%s: %v", ref, err)), ctrl.Result{})
	}
	metrics.ObserveRender(v1alpha1.EngineBundle, time.Since(start))
	s.resources = s.resourceRefs(stepObjects(install, bundle.StepResources))
	inputs := map[string]any{"installNamespace": s.targetNamespace(), "watchNamespaces": inst.Spec.WatchNamespaces}
	if len(inst.Spec.Resources) > 0 {
		// Only when set, so that installations from before spec.resources
		// keep their digest.
		inputs["resources"] = inst.Spec.Resources
	}
	valuesDigest, err := render.DigestOf(withScopedGrants(inst, inputs))
	if err != nil {
		return ctrl.Result{}, err
	}
	s.rendered = &render.Result{ValuesDigest: valuesDigest}
	rel := &release{}
	if trigger, run := bundleChange(s, valuesDigest); run {
		rel.plans, rel.trigger = []plan.Plan{install}, trigger
	}
	s.release = rel
	rel.namespace = r.createdNamespace(ctx, s, len(rel.plans) > 0 && !resuming(s))
	return ctrl.Result{}, nil
}

// convertBundle converts b for the installation's options and resources.
func convertBundle(b *bundle.Bundle, s *scope) (plan.Plan, error) {
	resources, err := specResources(s.inst)
	if err != nil {
		return plan.Plan{}, err
	}
	return bundle.Convert(b, bundle.Options{
		InstallNamespace: s.targetNamespace(),
		WatchNamespaces:  s.inst.Spec.WatchNamespaces,
		Name:             s.inst.Name,
		Resources:        resources,
	})
}

// bundleChange says whether the bundle's install plan runs for these
// inputs, and why: an install, an upgrade (a new bundle), a new install
// mode; a revision interrupted with the same inputs resumes.
func bundleChange(s *scope, valuesDigest string) (string, bool) {
	inst := s.inst
	version := s.choice.Version.Version
	if p := inst.Status.Pending; p != nil && p.Version == version && p.ArtifactDigest == s.artifactDigest && p.ValuesDigest == valuesDigest {
		return p.Trigger, true
	}
	if len(inst.Status.History) == 0 {
		return "install", true
	}
	last := inst.Status.History[0]
	switch {
	case last.Version != version:
		return fmt.Sprintf("upgrade %s → %s", last.Version, version), true
	case last.ArtifactDigest != s.artifactDigest:
		return "new content of " + version, true
	case last.ValuesDigest != valuesDigest:
		return "spec.watchNamespaces, spec.resources or spec.scopedGrants changed", true
	case inst.Status.Pending != nil:
		return fmt.Sprintf("back to the inputs of revision %d", last.Number), true
	}
	return "", false
}

// stepObjects returns the objects of p's step named name.
func stepObjects(p plan.Plan, name string) []*unstructured.Unstructured {
	for _, ph := range p.Phases {
		for _, st := range ph.Steps {
			if st.Name != name {
				continue
			}
			var objs []*unstructured.Unstructured
			for _, t := range st.Tasks {
				objs = append(objs, t.Objects...)
			}
			return objs
		}
	}
	return nil
}
