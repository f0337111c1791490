package installation

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/values"
)

// scopeGrants narrows, when spec.scopedGrants asks, the grants of what
// this reconcile would apply (gate.ScopeGrants): a chart's rendered
// objects, or the Apply tasks of a package's or bundle's plans, with the
// roles looked up across all of them. It runs before the gates, so the
// change's digest, its permission diff and an approval all cover the
// scoped objects, and the revision records them. What cannot be narrowed
// soundly stops the installation (terminal); status.scopedGrants says
// what changed.
func (r *Reconciler) scopeGrants(ctx context.Context, s *scope) (ctrl.Result, error) {
	sg := s.inst.Spec.ScopedGrants
	if sg == nil {
		s.inst.Status.ScopedGrants = nil
		return ctrl.Result{}, nil
	}
	if s.artifact.release == nil || s.artifact.release.Resumable() && len(s.artifact.run.plans) == 0 {
		// No plan runs: status.scopedGrants still describes the installed
		// revision.
		return ctrl.Result{}, nil
	}
	scoping, b := gate.Scope(s.inst, s.choice.Version.Version, s.artifact.toApply(), func(gr schema.GroupResource) (bool, bool, error) {
		return s.target.ResourceScope(ctx, gr)
	})
	if b != nil {
		return r.stop(s, b, ctrl.Result{})
	}
	var err error
	if s.artifact.release.Resumable() {
		s.artifact.run.plans = plan.RewriteApplies(s.artifact.run.plans, scoping.Rewrite)
	} else {
		scoped := *s.artifact.release
		scoped.Objects = scoping.Rewrite(s.artifact.release.Objects)
		if scoped.ValuesDigest, err = values.Digest(withScopedGrants(s.inst, s.artifact.release.ValuesDigest)); err != nil {
			return ctrl.Result{}, err
		}
		s.artifact.release = &scoped
	}
	s.inst.Status.ScopedGrants = scoping.Changes
	return ctrl.Result{}, nil
}

// withScopedGrants returns what an installation's values digest covers:
// the engine's inputs v, with spec.scopedGrants when it is set, so that
// setting, changing or removing it makes a new revision, and the digests
// of installations without it stay as they were.
func withScopedGrants(inst *v1alpha1.ExtensionInstallation, v any) any {
	if inst.Spec.ScopedGrants == nil {
		return v
	}
	return map[string]any{"values": v, "scopedGrants": slices.Sorted(slices.Values(inst.Spec.ScopedGrants.Namespaces))}
}
