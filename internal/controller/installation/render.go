package installation

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/values"
	"github.com/annex-platform/annex/internal/valuesfrom"
)

// render has the chosen version's engine make its release: a chart's
// objects, or a package's or bundle's plans, of which it chooses those
// this change runs (engine.Release.Choose) and renders them. Invalid values and
// broken artifacts stop here, before anything touches the cluster.
func (r *Reconciler) render(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	facts := &engineFacts{ctx: ctx, r: r, s: s}
	rel, err := r.engine(s.choice.Version.Engine).Render(ctx, engine.Input{
		Artifact:       s.artifact.data,
		ArtifactDigest: s.artifact.digest,
		Ref:            inst.Spec.Extension + " " + s.choice.Version.Version,
		Name:           inst.Name,
		Namespace:      s.targetNamespace(),
		KubeVersion:    inst.Status.ClusterVersion,
		// An adoption renders the chart as the release's next helm
		// upgrade would.
		IsUpgrade:           inst.Status.InstalledVersion != "" || adopting(inst),
		WatchNamespaces:     inst.Spec.WatchNamespaces,
		Resources:           inst.Spec.Resources,
		WebhookCertificates: inst.Spec.WebhookCertificates,
		Facts:               facts,
	})
	if rel != nil {
		s.artifact.digest = rel.ArtifactDigest
		plan.ListNeverRun(inst, rel.PlanNames)
	}
	switch {
	case facts.valuesBlock != nil:
		return r.stop(s, facts.valuesBlock, ctrl.Result{RequeueAfter: 30 * r.pollInterval()})
	case facts.apiVersionsErr != nil:
		// Not the artifact's fault: the Installed condition stays.
		s.block = retry(v1alpha1.ReasonRenderFailed, fmt.Sprintf("reading the API versions of %s for .Capabilities.APIVersions: %v",
			clusterName(inst.Spec.Cluster), facts.apiVersionsErr))
		return ctrl.Result{}, s.block
	}
	if err != nil {
		var refused *engine.Error
		var b *block
		switch {
		case errors.As(err, &refused) && refused.Retry:
			return r.stop(s, retry(refused.Reason, refused.Message), ctrl.Result{})
		case errors.As(err, &refused) && adopting(inst):
			return r.stop(s, terminal(refused.Reason, fmt.Sprintf(
				"%s; the chart does not render with the values of Helm release %s (spec.values, copied from it) that spec.adopt names: change spec.values, or fix the release with helm upgrade and adopt it again",
				refused.Message, inst.Spec.Adopt.Helm.Release)), ctrl.Result{})
		case errors.As(err, &refused):
			return r.stop(s, terminal(refused.Reason, refused.Message), ctrl.Result{})
		case errors.As(err, &b):
			return r.stop(s, b, ctrl.Result{})
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
	if len(rel.Warnings) > 0 {
		setCondition(inst, v1alpha1.ConditionWarnings, metav1.ConditionTrue, "PackageWarnings", strings.Join(rel.Warnings, "; "))
	} else if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionWarnings); c == nil || c.Reason != v1alpha1.ReasonCRDChangeWarnings {
		// What the last change did with its CRDs stays until the next
		// change is judged (checkCRDs).
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionWarnings)
	}
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

// engineFacts answers an engine's questions for one reconcile. A values
// source that blocks, or API versions that cannot be read, are kept to
// be reported as the controller's, not the engine's.
type engineFacts struct {
	ctx context.Context
	r   *Reconciler
	s   *scope

	valuesBlock    *block
	apiVersionsErr error
}

func (f *engineFacts) Values() (map[string]any, error) {
	composed, p, err := valuesfrom.Compose(f.ctx, f.r.Reader, f.s.inst)
	if p != nil {
		b := terminal(p.Reason, p.Message)
		if p.Wait {
			b = wait(p.Reason, p.Message)
		}
		f.valuesBlock = b
		return nil, b
	}
	return composed, err
}

func (f *engineFacts) APIVersions() ([]string, error) {
	versions, err := f.s.target.APIVersions(f.ctx)
	if err != nil {
		f.apiVersionsErr = err
	}
	return versions, err
}

func (f *engineFacts) InstalledParams() (map[string]any, error) {
	prev, _, err := f.r.records(f.s).Installed(f.ctx)
	return plan.DecodePackageRecord(prev.Package).Params, err
}

func (f *engineFacts) Serves(gvk schema.GroupVersionKind) (bool, error) {
	answer, err := f.s.target.Serves(f.ctx, gvk)
	return answer.Served, err
}

func (f *engineFacts) Secret(namespace, name string) (map[string][]byte, error) {
	stub := &unstructured.Unstructured{}
	stub.SetAPIVersion("v1")
	stub.SetKind("Secret")
	stub.SetNamespace(namespace)
	stub.SetName(name)
	live, err := f.s.target.Applier().Live(f.ctx, namespace, []*unstructured.Unstructured{stub})
	if err != nil || len(live) == 0 {
		return nil, err
	}
	encoded, _, _ := unstructured.NestedStringMap(live[0].Object, "data")
	data := make(map[string][]byte, len(encoded))
	for k, v := range encoded {
		if data[k], err = base64.StdEncoding.DecodeString(v); err != nil {
			return nil, fmt.Errorf("secret %s/%s: key %s: %w", namespace, name, k, err)
		}
	}
	return data, nil
}

func (f *engineFacts) Now() time.Time {
	if f.r.CertificateClock != nil {
		return f.r.CertificateClock()
	}
	return f.r.now()
}

func (f *engineFacts) Base(name, versionRange string) (v1alpha1.ExtensionVersion, error) {
	v, missing := resolve.Base(f.s.cluster.Extensions, name, versionRange)
	switch {
	case missing != nil && missing.Wait:
		return v1alpha1.ExtensionVersion{}, wait(missing.Reason, missing.Message)
	case missing != nil:
		return v1alpha1.ExtensionVersion{}, terminal(missing.Reason, missing.Message)
	}
	return *v, nil
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
