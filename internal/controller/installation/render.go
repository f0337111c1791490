package installation

import (
	"context"
	"errors"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/crdcheck"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/enginefacts"
	"github.com/annex-platform/annex/internal/fleet"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/values"
)

// render has the chosen version's engine make its release: a chart's
// objects, or a package's or bundle's plans, of which it chooses those
// this change runs (engine.Release.Choose) and renders them. Invalid values and
// broken artifacts stop here, before anything touches the cluster.
func (r *Reconciler) render(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	clock := r.now
	if r.CertificateClock != nil {
		clock = r.CertificateClock
	}
	known := &enginefacts.Of{Ctx: ctx, Hub: r.Reader, Installation: inst, Target: s.target, Extensions: s.cluster.Extensions, Clock: clock,
		Installed: func() (map[string]any, error) {
			prev, _, err := r.records(s).Installed(ctx)
			return plan.DecodePackageRecord(prev.Package).Params, err
		}}
	rel, err := r.engine(s.choice.Version.Engine).Render(ctx, engine.Input{
		Artifact:       s.artifact.data,
		ArtifactDigest: s.artifact.digest,
		Ref:            inst.Spec.Extension + " " + s.choice.Version.Version,
		Name:           inst.Name,
		Namespace:      s.targetNamespace(),
		KubeVersion:    inst.Status.ClusterVersion,
		// An adoption renders the chart as the release's next helm
		// upgrade would.
		IsUpgrade:           inst.Status.InstalledVersion != "" || adopt.Adopting(inst),
		WatchNamespaces:     inst.Spec.WatchNamespaces,
		Resources:           inst.Spec.Resources,
		WebhookCertificates: inst.Spec.WebhookCertificates,
		Facts:               known,
	})
	if rel != nil {
		s.artifact.digest = rel.ArtifactDigest
		plan.ListNeverRun(inst, rel.PlanNames)
	}
	switch {
	case known.ValuesProblem != nil:
		p := known.ValuesProblem
		return r.stop(s, waitOrTerminal(p.Wait, p.Reason, p.Message), ctrl.Result{RequeueAfter: 30 * r.pollInterval()})
	case known.APIVersionsErr != nil:
		// Not the artifact's fault: the Installed condition stays.
		s.block = retry(v1alpha1.ReasonRenderFailed, fmt.Sprintf("reading the API versions of %s for .Capabilities.APIVersions: %v",
			fleet.ClusterName(inst.Spec.Cluster), known.APIVersionsErr))
		return ctrl.Result{}, s.block
	}
	if err != nil {
		var noBase *resolve.BaseError
		adopted := ""
		if adopt.Adopting(inst) {
			adopted = inst.Spec.Adopt.Helm.Release
		}
		switch b := engine.Refusal(err, adopted); {
		case b != nil:
			return r.stop(s, b, ctrl.Result{})
		case errors.As(err, &noBase):
			return r.stop(s, waitOrTerminal(noBase.Wait, noBase.Reason, noBase.Message), ctrl.Result{})
		}
		return ctrl.Result{}, err
	}
	if rel.Inputs != nil {
		if rel.ValuesDigest, err = values.Digest(withScopedGrants(inst, rel.Inputs)); err != nil {
			return ctrl.Result{}, err
		}
	}
	s.artifact.release = rel
	s.artifact.resources = s.resourceRefs(rel.Resources)
	if rel.Resumable() {
		if res, err := r.renderPlans(ctx, s); err != nil || s.block != nil {
			return res, err
		}
	}
	crdcheck.ShowReleaseWarnings(inst, rel.Warnings)
	return ctrl.Result{}, nil
}

// engine returns the engine of name; "" is a Helm chart, and so is a
// name the manager wires no engine for (the API admits none).
func (r *Reconciler) engine(name v1alpha1.Engine) Engine {
	if e, ok := r.Engines[name]; ok {
		return e
	}
	return r.Engines[v1alpha1.EngineHelm]
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// waitOrTerminal is a wait block when what is missing may come later (a
// values source, a base package), a terminal one when the spec must change.
func waitOrTerminal(later bool, reason, message string) *block {
	if later {
		return wait(reason, message)
	}
	return terminal(reason, message)
}
