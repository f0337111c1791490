package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// fluxWeb is the chart the Flux HelmRelease of TestAdoptFluxHelmRelease
// installed: a Deployment, a Service and a ConfigMap.
var fluxWeb = helmrepo.Chart{Name: "web", Version: "1.0.0", Files: map[string]string{
	"values.yaml": "message: hello\n",
	"templates/all.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
---
apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}}
data: {message: {{ .Values.message | quote }}}
`,
}}

// A release that Flux's helm-controller manages is handed over to Annex
// under `annex dev`: annexctl adopt helmrelease creates the Catalog of the
// HelmRelease's HelmRepository, suspends the HelmRelease and adopts the
// release, which Flux names [targetNamespace-]name and stores in the
// HelmRelease's namespace. Every object keeps its UID, the Deployment is
// not rolled, Helm's storage is gone, and deleting the HelmRelease
// afterwards leaves everything running: Helm has no release left to
// uninstall.
//
// helm-controller itself does not run here; the HelmRelease and
// HelmRepository CRDs are Flux's own, generated in the test from Flux's
// API types (fluxCRDs), and the release is installed with the Helm SDK
// as helm-controller would (release apps-web, objects in apps, storage in
// flux-system).
func TestAdoptFluxHelmRelease(t *testing.T) {
	_, _, exited, stateDir := startDev(t, 3*time.Minute)
	kubeconfig := filepath.Join(stateDir, "kubeconfig")
	c := clientFromKubeconfig(t, kubeconfig)
	waitDevReady(t, c, exited)
	ctx := context.Background()

	for _, crd := range fluxCRDs(t) {
		if err := c.Create(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"flux-system", "apps"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	repo := helmrepo.NewServer(t, fluxWeb)
	helmCfg, err := helmrepo.Install(ctx, kubeconfig, "secret", "flux-system", "apps", "apps-web", "helm-controller", fluxWeb, map[string]any{"message": "from flux"})
	if err != nil {
		t.Fatal(err)
	}

	hr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
		"metadata": map[string]any{"name": "web", "namespace": "flux-system"},
		"spec": map[string]any{
			"interval": "5m", "targetNamespace": "apps", "values": map[string]any{"message": "from flux"},
			"chart": map[string]any{"spec": map[string]any{"chart": "web", "version": "1.0.0",
				"sourceRef": map[string]any{"kind": "HelmRepository", "name": "charts"}}},
		},
	}}
	src := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
		"metadata": map[string]any{"name": "charts", "namespace": "flux-system"},
		"spec":     map[string]any{"url": repo.URL(), "interval": "10m"},
	}}
	waitFor(t, time.Minute, exited, func() error {
		for _, obj := range []*unstructured.Unstructured{src.DeepCopy(), hr.DeepCopy()} {
			if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return err // the CRDs may not be served yet
			}
		}
		return nil
	})

	type kept struct {
		obj client.Object
		uid types.UID
	}
	objs := []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ConfigMap{}}
	before := map[string]kept{}
	for _, o := range objs {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "apps-web"}, o); err != nil {
			t.Fatal(err)
		}
		before[kindOf(o)] = kept{o, o.GetUID()}
	}
	generation := before["Deployment"].obj.GetGeneration()

	annexctl := buildAnnexctl(t)
	// A dry run changes nothing; without a Catalog of the source it says
	// which one the real run creates.
	out, err := exec.Command(annexctl, "--kubeconfig", kubeconfig, "adopt", "helmrelease", "web", "-n", "flux-system", "--dry-run").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no Catalog serves HelmRepository flux-system/charts") || !strings.Contains(string(out), "creates Catalog flux-flux-system-charts") {
		t.Errorf("adopt helmrelease --dry-run without a Catalog: %v\n%s", err, out)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(hr), hr); err != nil {
		t.Fatal(err)
	}
	if suspended, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend"); suspended {
		t.Errorf("the dry run suspended HelmRelease flux-system/web")
	}
	out, err = exec.Command(annexctl, "--kubeconfig", kubeconfig, "adopt", "helmrelease", "web", "-n", "flux-system", "--timeout", "3m").CombinedOutput()
	t.Logf("annexctl adopt helmrelease web -n flux-system:\n%s", out)
	if err != nil {
		t.Fatalf("adopt helmrelease: %v", err)
	}
	for _, want := range []string{
		"created Catalog flux-flux-system-charts for HelmRepository flux-system/charts",
		"suspended HelmRelease flux-system/web",
		"kept     Deployment.apps apps/apps-web",
		"HelmRelease flux-system/web stays suspended",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %q", want)
		}
	}

	// The HelmRelease is suspended; the installation adopted the release.
	if err := c.Get(ctx, client.ObjectKeyFromObject(hr), hr); err != nil {
		t.Fatal(err)
	}
	if suspended, _, _ := unstructured.NestedBool(hr.Object, "spec", "suspend"); !suspended {
		t.Errorf("HelmRelease flux-system/web: spec.suspend is not true")
	}
	var inst v1alpha1.ExtensionInstallation
	if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "apps-web"}, &inst); err != nil {
		t.Fatal(err)
	}
	if inst.Status.AdoptedFrom == nil || !meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) {
		t.Errorf("installation apps/apps-web: adoptedFrom %+v, conditions %+v", inst.Status.AdoptedFrom, inst.Status.Conditions)
	}
	var storage corev1.SecretList
	if err := c.List(ctx, &storage, client.InNamespace("flux-system"), client.MatchingLabels{"owner": "helm", "name": "apps-web"}); err != nil {
		t.Fatal(err)
	}
	if len(storage.Items) != 0 {
		t.Errorf("Helm's storage of apps-web is still there: %d Secrets", len(storage.Items))
	}

	// Deleting the HelmRelease leaves everything as it is, and Helm has
	// no release left that an uninstall could remove.
	if err := c.Delete(ctx, hr); err != nil {
		t.Fatal(err)
	}
	uninstall := action.NewUninstall(helmCfg)
	uninstall.WaitStrategy = kube.HookOnlyStrategy
	if _, err := uninstall.Run("apps-web"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("helm uninstall apps-web after the adoption: %v, want release not found", err)
	}
	for kind, k := range before {
		o := k.obj.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "apps-web"}, o); err != nil {
			t.Fatalf("%s apps/apps-web after the HelmRelease's deletion: %v", kind, err)
		}
		if o.GetUID() != k.uid {
			t.Errorf("%s apps/apps-web was replaced: uid %s, was %s", kind, o.GetUID(), k.uid)
		}
		if kind == "Deployment" && o.GetGeneration() != generation {
			t.Errorf("Deployment apps/apps-web was rolled: generation %d, was %d", o.GetGeneration(), generation)
		}
	}

	// Annex uninstalls it cleanly.
	if err := c.Delete(ctx, &inst); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, exited, func() error {
		for _, o := range objs {
			if err := c.Get(ctx, client.ObjectKey{Namespace: "apps", Name: "apps-web"}, o); !apierrors.IsNotFound(err) {
				return errString(kindOf(o) + " apps/apps-web is still there")
			}
		}
		return nil
	})
}

type errString string

func (e errString) Error() string { return string(e) }

func kindOf(o client.Object) string {
	switch o.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *corev1.Service:
		return "Service"
	default:
		return "ConfigMap"
	}
}

// fluxCRDs returns the CustomResourceDefinitions of Flux's HelmRelease
// (helm.toolkit.fluxcd.io) and HelmRepository (source.toolkit.fluxcd.io),
// generated by controller-gen from the API types of helm-controller and
// source-controller that hack/fluxcrds pins — as Flux generates the CRDs
// it publishes (crd:crdVersions=v1 over its api module), so that what the
// test creates is validated by Flux's published schema.
func fluxCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	gen := exec.Command("go", "tool", "controller-gen", "crd:crdVersions=v1",
		"paths=github.com/fluxcd/helm-controller/api/...", "paths=github.com/fluxcd/source-controller/api/...",
		"output:crd:dir="+out)
	gen.Dir = filepath.Join(root, "hack", "fluxcrds")
	if b, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("generating Flux's CRDs in hack/fluxcrds: %v\n%s", err, b)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, file := range []string{"helm.toolkit.fluxcd.io_helmreleases.yaml", "source.toolkit.fluxcd.io_helmrepositories.yaml"} {
		data, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		crds = append(crds, crd)
	}
	return crds
}

// buildAnnexctl builds bin/annexctl's source into a temporary folder.
func buildAnnexctl(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "annexctl")
	build := exec.Command("go", "build", "-o", out, "./cmd/annexctl")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/annexctl: %v\n%s", err, b)
	}
	return out
}
