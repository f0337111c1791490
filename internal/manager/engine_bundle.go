package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/engine/bundle"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/plan"
)

// bundleEngine converts OLM registry+v1 bundles with
// internal/engine/bundle into one install plan for the install mode
// spec.watchNamespaces selects, with spec.resources as its last step.
type bundleEngine struct{ fetcher artifactFetcher }

// Fetch returns the bundle's tree as its canonical JSON (map keys sorted:
// the same tree, the same bytes), which the revision's digest covers.
func (e bundleEngine) Fetch(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	files, err := e.fetcher.FetchBundle(ctx, src)
	if err != nil {
		return nil, err
	}
	return json.Marshal(files)
}

// Render converts the bundle. What the bundle or the install mode cannot
// support is refused, naming the field. The install plan replaces
// everything an earlier revision applied, so what left the bundle is
// pruned.
func (bundleEngine) Render(_ context.Context, in engine.Input) (*engine.Release, error) {
	var files map[string][]byte
	if err := json.Unmarshal(in.Artifact, &files); err != nil {
		return nil, refused(v1alpha1.ReasonArtifactFailed, fmt.Sprintf(
			"%s: the artifact is not a registry+v1 bundle: %v; fix the bundle in its catalog or choose another version", in.Ref, err))
	}
	start := time.Now()
	b, err := bundle.Load(files)
	if err != nil {
		return nil, refused(v1alpha1.ReasonArtifactFailed, fmt.Sprintf(
			"%s: the artifact is not a registry+v1 bundle: %v; fix the bundle in its catalog or choose another version", in.Ref, err))
	}
	install, err := convertBundle(b, in)
	var facts *factError
	var engineErr *engine.Error
	if errors.As(err, &engineErr) {
		return nil, engineErr
	}
	if errors.As(err, &facts) {
		// Reading the certificate Secrets failed: the controller's to
		// phrase and retry.
		return nil, facts.err
	}
	if err != nil {
		// Convert is pure: what it refuses (an *UnsupportedError names the
		// CSV field, spec.watchNamespaces or spec.resources[i]) is refused
		// every time.
		return nil, refused(v1alpha1.ReasonRenderFailed, fmt.Sprintf("%s: %v", in.Ref, err))
	}
	metrics.ObserveRender(v1alpha1.EngineBundle, time.Since(start))
	inputs := map[string]any{"installNamespace": in.Namespace, "watchNamespaces": in.WatchNamespaces}
	if len(in.Resources) > 0 {
		// Only when set, so that installations from before spec.resources
		// keep their digest.
		inputs["resources"] = in.Resources
	}
	if wc := in.WebhookCertificates; wc != nil && wc.Provider == v1alpha1.WebhookCertificatesCertManager {
		// Only when cert-manager issues them: another issuer is another
		// release.
		inputs["webhookCertificates"] = wc
	}
	if certs := certificateExpiries(install); len(certs) > 0 {
		// Only with webhooks. The expiry changes when a certificate is
		// renewed, so a renewal is a new revision that applies it.
		inputs["certificates"] = certs
	}
	return &engine.Release{
		ArtifactDigest: in.ArtifactDigest,
		Inputs:         inputs,
		Plans:          bundlePlans{install},
		Resources:      stepObjects(install, bundle.StepResources),
		ResourcesTask:  bundle.StepResources,
	}, nil
}

// convertBundle converts b for the installation's options and resources.
func convertBundle(b *bundle.Bundle, in engine.Input) (plan.Plan, error) {
	resources, err := specResources(in.Resources)
	if err != nil {
		return plan.Plan{}, err
	}
	certManager, err := certManagerIssuer(in)
	if err != nil {
		return plan.Plan{}, err
	}
	var secretErr error
	certificates := &bundle.CertificateInputs{Now: in.Facts.Now(), Secret: func(name string) map[string][]byte {
		data, err := in.Facts.Secret(in.Namespace, name)
		if err != nil && secretErr == nil {
			secretErr = err
		}
		return data
	}}
	p, err := bundle.Convert(b, bundle.Options{
		InstallNamespace: in.Namespace,
		WatchNamespaces:  in.WatchNamespaces,
		Name:             in.Name,
		Resources:        resources,
		Certificates:     certificates,
		CertManager:      certManager,
	})
	if secretErr != nil {
		return plan.Plan{}, &factError{secretErr}
	}
	return p, err
}

// certManagerIssuer is the issuer spec.webhookCertificates has
// cert-manager use; nil when Annex issues the certificates. Asking for
// cert-manager on a cluster that does not serve its Certificates is
// retried (cert-manager may be on its way), saying what to do.
func certManagerIssuer(in engine.Input) (*bundle.CertManagerIssuer, error) {
	wc := in.WebhookCertificates
	if wc == nil || wc.Provider != v1alpha1.WebhookCertificatesCertManager {
		return nil, nil
	}
	served, err := in.Facts.Serves(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"})
	if err != nil {
		return nil, &factError{err}
	}
	if !served {
		return nil, &engine.Error{Reason: v1alpha1.ReasonRenderFailed, Retry: true, Message: fmt.Sprintf(
			"%s: spec.webhookCertificates.provider is CertManager, but the cluster does not serve cert-manager.io/v1 Certificates; "+
				"install cert-manager there (Annex waits for it), or remove spec.webhookCertificates to have Annex issue the certificates", in.Ref)}
	}
	issuer := &bundle.CertManagerIssuer{}
	if ref := wc.IssuerRef; ref != nil {
		issuer.Name, issuer.Kind = ref.Name, ref.Kind
	}
	return issuer, nil
}

// factError is an error of the engine's facts met while converting.
type factError struct{ err error }

func (e *factError) Error() string { return e.err.Error() }

// certificateExpiries returns, for each webhook certificate Secret of p,
// when its certificate expires.
func certificateExpiries(p plan.Plan) map[string]string {
	out := map[string]string{}
	for _, obj := range p.Objects(plan.TaskApply) {
		if at, ok := obj.GetAnnotations()[bundle.AnnotationCertificateNotAfter]; ok && obj.GetKind() == "Secret" {
			out[obj.GetName()] = at
		}
	}
	return out
}

// specResources decodes spec.resources for the bundle engine, which
// checks them against the bundle. The API server has made sure each
// object is an object with apiVersion, kind and a name.
func specResources(resources []v1alpha1.CustomResource) ([]bundle.Resource, error) {
	out := make([]bundle.Resource, 0, len(resources))
	for i, r := range resources {
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(r.Object.Raw, &obj.Object); err != nil {
			return nil, fmt.Errorf("spec.resources[%d].object: %w", i, err)
		}
		out = append(out, bundle.Resource{Object: obj, ReadyCondition: r.ReadyCondition})
	}
	return out, nil
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

// bundlePlans is a bundle's one plan, install: it runs on every change.
type bundlePlans struct{ install plan.Plan }

func (bp bundlePlans) Select(c engine.Change) ([]string, string) {
	if c.Install {
		return []string{bp.install.Name}, "install"
	}
	// An upgrade's trigger is the controller's ("upgrade a → b", "new
	// content of v"); otherwise only these inputs change the plan.
	return []string{bp.install.Name}, "spec.watchNamespaces, spec.resources or spec.scopedGrants changed"
}

func (bp bundlePlans) Render(names []string) ([]plan.Plan, []string, error) {
	var plans []plan.Plan
	for _, name := range names {
		if name != bp.install.Name {
			return nil, nil, refused(v1alpha1.ReasonRenderFailed, fmt.Sprintf("a bundle has one plan, %s; it has no plan %s", bp.install.Name, name))
		}
		plans = append(plans, bp.install)
	}
	return plans, nil, nil
}

func (bundlePlans) Cleanup() (*plan.Plan, []string) { return nil, nil }
