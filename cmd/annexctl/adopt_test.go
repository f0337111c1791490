package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// webChart has a Deployment, a Service, a ConfigMap and a post-install
// hook.
var webChart = helmrepo.Chart{Name: "web", Version: "1.0.0", AppVersion: "1.27", Files: map[string]string{
	"values.yaml": "replicas: 1\nmessage: hello\nimage: nginx:1.27\n",
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      containers:
      - name: web
        image: {{ .Values.image }}
        ports: [{name: http, containerPort: 80}]
        resources: {requests: {cpu: "0.1", memory: 32Mi}}
`,
	"templates/service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{name: http, port: 80, targetPort: http}]
`,
	"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  message: {{ .Values.message | quote }}
`,
	"templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-installed
  annotations: {helm.sh/hook: post-install, helm.sh/hook-delete-policy: before-hook-creation}
data: {at: install}
`,
}}

// helmInstall installs chart c as release name in namespace ns with the
// Helm v4 SDK, storage driver driver ("secret" or "configmap"), as `helm
// install` does, and returns the action configuration for later steps.
func helmInstall(t *testing.T, kubeconfig, driver, ns, name string, c helmrepo.Chart, values map[string]any) *action.Configuration {
	t.Helper()
	return helmInstallStored(t, kubeconfig, driver, ns, ns, name, c, values)
}

// helmInstallStored is helmInstall with the release stored in namespace
// storage, as Flux's helm-controller does with spec.storageNamespace.
func helmInstallStored(t *testing.T, kubeconfig, driver, storage, ns, name string, c helmrepo.Chart, values map[string]any) *action.Configuration {
	t.Helper()
	cfg, err := helmrepo.Install(context.Background(), kubeconfig, driver, storage, ns, name, kube.ManagedFieldsManager, c, values)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// adopt helm against a real API server, with releases that Helm's SDK
// installed and a catalog that serves the chart from a Helm repository.
func TestAdoptHelm(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a", "team-b", "platform"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// The catalog "charts" serves web 1.0.0 and a strict 1.0.0 that
	// requires a message; its Extensions are what the catalog controller
	// publishes from the repository's index.
	strict := helmrepo.Chart{Name: "strict", Version: "1.0.0", Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: strict}\ndata: {m: {{ required \"message is required\" .Values.message | quote }}}\n",
	}}
	repo := helmrepo.NewServer(t, webChart, strict)
	cat := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "charts"},
		Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}}
	if err := env.Client.Create(ctx, cat); err != nil {
		t.Fatal(err)
	}
	index, err := (&sources.Catalogs{Fetcher: &catalog.Fetcher{}}).Index(ctx, cat)
	if err != nil {
		t.Fatal(err)
	}
	for name, spec := range catalog.Merge([]catalog.CatalogIndex{{Name: cat.Name, Packages: index.Packages}}) {
		ext := &v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.LabelCatalog: cat.Name}}, Spec: spec}
		if err := env.Client.Create(ctx, ext); err != nil {
			t.Fatal(err)
		}
	}
	// A ManagedCluster that is the same API server, reached through its
	// kubeconfig Secret as any managed cluster.
	kc, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "member"}, Data: map[string][]byte{"kubeconfig": kc}},
		&v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "member"},
			Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: "platform", Name: "member"}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	annexctl := func(args ...string) (string, int) {
		return run(t, "annexctl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}
	cfg := helmInstall(t, kubeconfig, "secret", "team-a", "web", webChart, map[string]any{"replicas": 2, "message": "hi"})

	// Unchanged: every object is the same; the hook is counted.
	out, code := annexctl("adopt", "helm", "web", "-n", "team-a", "--dry-run")
	want := `Helm release team-a/web on the hub cluster: revision 1, deployed (Secret team-a/sh.helm.release.v1.web.v1)
Chart web 1.0.0: Extension web 1.0.0, catalog charts, rendered with the release's user-supplied values (message, replicas)

same     ConfigMap team-a/web
same     Service team-a/web
same     Deployment.apps team-a/web

3 same, 0 differ, 0 missing, 0 extra; 1 Helm hook not compared (adoption does not run it again).
Nothing was changed (dry run); without --dry-run, annexctl adopt helm adopts the release in place.
`
	if code != 0 || out != want {
		t.Fatalf("adopt helm of an unchanged release: exit %d\n%s\nwant\n%s", code, out, want)
	}

	// Edited by hand after the install: scaled, and the message changed.
	var dep appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web"}, &dep); err != nil {
		t.Fatal(err)
	}
	dep.Spec.Replicas = ptr(int32(5))
	if err := env.Client.Update(ctx, &dep); err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web"}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["message"] = "edited"
	if err := env.Client.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	out, code = annexctl("adopt", "helm", "web", "-n", "team-a", "--dry-run")
	if code != 0 || !strings.Contains(out, `
differs  ConfigMap team-a/web
           .data.message: "edited" → "hi"
missing  Service team-a/web
differs  Deployment.apps team-a/web
           .spec.replicas: 5 → 2

0 same, 2 differ, 1 missing, 0 extra;`) {
		t.Errorf("adopt helm of an edited release: exit %d\n%s", code, out)
	}
	// -o yaml carries the same comparison for scripts.
	out, code = annexctl("adopt", "helm", "web", "-n", "team-a", "-o", "yaml", "--dry-run")
	if code != 0 || !strings.Contains(out, "- fields:\n  - live: edited\n    path: .data.message\n    render: hi\n  object:\n    kind: ConfigMap\n") ||
		!strings.Contains(out, "values:\n  message: hi\n  replicas: 2\n") {
		t.Errorf("adopt helm -o yaml: exit %d\n%s", code, out)
	}

	// A revision left pending-upgrade (an upgrade that died half way),
	// written through Helm's storage: refused with the fix, which works.
	last, err := cfg.Releases.Last("web")
	if err != nil {
		t.Fatal(err)
	}
	pending := *last.(*rspb.Release)
	info := *pending.Info
	info.Status = common.StatusPendingUpgrade
	pending.Info, pending.Version = &info, 2
	if err := cfg.Releases.Create(&pending); err != nil {
		t.Fatal(err)
	}
	out, code = annexctl("adopt", "helm", "web", "-n", "team-a", "--dry-run")
	if code != cli.ExitError || !strings.Contains(out, "Helm release team-a/web: its latest revision 2 is pending-upgrade (Secret team-a/sh.helm.release.v1.web.v2)") ||
		!strings.Contains(out, "(kubectl delete secret sh.helm.release.v1.web.v2 -n team-a), or roll back to it (helm rollback web 1 -n team-a") {
		t.Errorf("adopt helm of a pending-upgrade release: exit %d\n%s", code, out)
	}
	if err := env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "sh.helm.release.v1.web.v2"}}); err != nil {
		t.Fatal(err)
	}
	if out, code := annexctl("adopt", "helm", "web", "-n", "team-a", "--dry-run"); code != 0 || !strings.Contains(out, "revision 1, deployed") {
		t.Errorf("adopt helm after deleting the pending revision: exit %d\n%s", code, out)
	}

	// The ConfigMap storage driver, on a ManagedCluster.
	helmInstall(t, kubeconfig, "configmap", "team-b", "site", webChart, nil)
	out, code = annexctl("adopt", "helm", "site", "-n", "team-b", "--cluster", "member", "--dry-run")
	if code != 0 || !strings.HasPrefix(out, "Helm release team-b/site on ManagedCluster member: revision 1, deployed (ConfigMap team-b/sh.helm.release.v1.site.v1)\n") ||
		!strings.Contains(out, "3 same, 0 differ, 0 missing, 0 extra;") {
		t.Errorf("adopt helm of a ConfigMap-driver release on a managed cluster: exit %d\n%s", code, out)
	}

	// A release stored in another namespace than its objects (Flux's
	// storageNamespace): -n names the storage; the objects are compared
	// in the release's namespace.
	helmInstallStored(t, kubeconfig, "secret", "platform", "team-b", "flux-web", webChart, map[string]any{"message": "from flux"})
	out, code = annexctl("adopt", "helm", "flux-web", "-n", "platform", "--dry-run")
	if code != 0 || !strings.HasPrefix(out, "Helm release team-b/flux-web on the hub cluster: revision 1, deployed (Secret platform/sh.helm.release.v1.flux-web.v1)\n") ||
		!strings.Contains(out, "same     ConfigMap team-b/flux-web\n") || !strings.Contains(out, "3 same, 0 differ, 0 missing, 0 extra;") {
		t.Errorf("adopt helm of a release stored in another namespace: exit %d\n%s", code, out)
	}

	// A release that does not exist: the namespace's releases are listed.
	if out, code := annexctl("adopt", "helm", "nope", "-n", "team-a", "--dry-run"); code != cli.ExitError ||
		!strings.Contains(out, `no Helm release "nope" in namespace team-a of the hub cluster; its releases are: web`) {
		t.Errorf("adopt helm of a missing release: exit %d\n%s", code, out)
	}
	// A chart in no catalog: the catalogs searched are named.
	other := helmrepo.Chart{Name: "other", Version: "0.1.0", Files: map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"}}
	helmInstall(t, kubeconfig, "secret", "team-a", "other", other, nil)
	if out, code := annexctl("adopt", "helm", "other", "-n", "team-a", "--dry-run"); code != cli.ExitError ||
		!strings.Contains(out, `chart other 0.1.0 of Helm release team-a/other is in no catalog: searched catalogs charts, none offers Extension "other"`) {
		t.Errorf("adopt helm of a chart in no catalog: exit %d\n%s", code, out)
	}
	// The same chart name at a version the catalog does not serve.
	old := webChart
	old.Version = "0.9.0"
	helmInstall(t, kubeconfig, "secret", "team-b", "old", old, nil)
	if out, code := annexctl("adopt", "helm", "old", "-n", "team-b", "--dry-run"); code != cli.ExitError ||
		!strings.Contains(out, `Extension "web" offers 1.0.0 but not 0.9.0`) {
		t.Errorf("adopt helm of a version in no catalog: exit %d\n%s", code, out)
	}
	// A release installed from a fork of strict 1.0.0 that set the
	// message in its values.yaml: the catalog's chart does not render
	// with the release's values.
	fork := strict
	fork.Files = map[string]string{"values.yaml": "message: forked\n", "templates/cm.yaml": strict.Files["templates/cm.yaml"]}
	helmInstall(t, kubeconfig, "secret", "team-b", "strict", fork, nil)
	if out, code := annexctl("adopt", "helm", "strict", "-n", "team-b", "--dry-run"); code != cli.ExitError ||
		!strings.Contains(out, "chart strict 1.0.0 does not render with the values of Helm release team-b/strict revision 1 (helm get values strict -n team-b --revision 1 shows them)") ||
		!strings.Contains(out, "message is required") {
		t.Errorf("adopt helm of a chart that does not render: exit %d\n%s", code, out)
	}

	// A release whose manifest has an object Annex's render does not (a
	// post-renderer added it, here a fork of web 1.0.0 with one more
	// template): extra.
	forked := webChart
	forked.Files = map[string]string{"templates/extra.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: {{ .Release.Name }}-extra}\n"}
	for p, content := range webChart.Files {
		forked.Files[p] = content
	}
	helmInstall(t, kubeconfig, "secret", "team-b", "forked", forked, nil)
	if out, code := annexctl("adopt", "helm", "forked", "-n", "team-b", "--dry-run"); code != 0 ||
		!strings.Contains(out, "\nextra    Secret team-b/forked-extra\n") || !strings.Contains(out, "3 same, 0 differ, 0 missing, 1 extra;") {
		t.Errorf("adopt helm of a release with an object the chart does not render: exit %d\n%s", code, out)
	}

	// Completion of release names, from the namespace given.
	out, code = annexctl("__complete", "adopt", "helm", "-n", "team-b", "")
	if code != 0 || !strings.HasPrefix(out, "forked\nold\nsite\nstrict\n:4\n") {
		t.Errorf("__complete adopt helm -n team-b: exit %d\n%s", code, out)
	}
}

func ptr[T any](v T) *T { return &v }
