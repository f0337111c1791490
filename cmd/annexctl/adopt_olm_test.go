package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/olmv0"
)

// adopt olm against a real API server with what OLM v0 leaves for an
// installed operator: it refuses a CSV that is not Succeeded and a
// version no olm catalog serves (naming the catalogs searched), and
// --dry-run says what adopting would do, writing nothing.
func TestAdoptOLM(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	annexctl := func(args ...string) (string, int) {
		return run(t, "annexctl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "operators"}}); err != nil {
		t.Fatal(err)
	}
	if err := olmv0.InstallCRDs(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	if _, err := olmv0.Operator(ctx, env.Client, "operators", "memcached", "memcached-operator", "alpha", "0.2.0", "Succeeded", "install-abc"); err != nil {
		t.Fatal(err)
	}
	if _, err := olmv0.Operator(ctx, env.Client, "operators", "stuck", "stuck-operator", "stable", "1.0.0", "Installing", "install-def"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*v1alpha1.Catalog{
		{ObjectMeta: metav1.ObjectMeta{Name: "operatorhub"}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{URL: "https://catalog.example.com/index.json"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "charts"}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: "https://charts.example.com"}}}},
	} {
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}

	out, code := annexctl("adopt", "olm", "stuck", "-n", "operators", "--dry-run")
	if code == 0 || !strings.Contains(out, `ClusterServiceVersion operators/stuck-operator.v1.0.0 of Subscription operators/stuck is in phase "Installing"`) ||
		!strings.Contains(out, "fix it with OLM until its CSV is Succeeded, then adopt again") {
		t.Errorf("a CSV that is not Succeeded: exit %d\n%s", code, out)
	}
	out, code = annexctl("adopt", "olm", "memcached", "-n", "operators", "--dry-run")
	if code == 0 || !strings.Contains(out, `operator memcached-operator 0.2.0 of Subscription operators/memcached (ClusterServiceVersion memcached-operator.v0.2.0) is in no olm catalog: searched olm catalogs operatorhub, none offers package "memcached-operator"`) {
		t.Errorf("a package in no catalog: exit %d\n%s", code, out)
	}
	out, code = annexctl("adopt", "olm", "nothing", "-n", "operators", "--dry-run")
	if code == 0 || !strings.Contains(out, `no Subscription "nothing" (operators.coreos.com/v1alpha1) in namespace operators of the hub cluster`) {
		t.Errorf("no such Subscription: exit %d\n%s", code, out)
	}

	// The catalog publishes the package (written here as the catalog
	// controller would): 0.1.0 only, then 0.2.0.
	ext := &v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "memcached-operator"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
		{Version: "0.1.0", Engine: v1alpha1.EngineBundle, Source: v1alpha1.ArtifactSource{Catalog: "operatorhub", URL: "https://catalog.example.com/memcached-operator.v0.1.0"}},
	}}}
	if err := env.Client.Create(ctx, ext); err != nil {
		t.Fatal(err)
	}
	out, code = annexctl("adopt", "olm", "memcached", "-n", "operators", "--dry-run")
	if code == 0 || !strings.Contains(out, `package "memcached-operator" is offered at 0.1.0 but not 0.2.0`) {
		t.Errorf("a version in no catalog: exit %d\n%s", code, out)
	}
	ext.Spec.Versions = append(ext.Spec.Versions, v1alpha1.ExtensionVersion{Version: "0.2.0", Engine: v1alpha1.EngineBundle,
		Source: v1alpha1.ArtifactSource{Catalog: "operatorhub", URL: "https://catalog.example.com/memcached-operator.v0.2.0"}})
	if err := env.Client.Update(ctx, ext); err != nil {
		t.Fatal(err)
	}
	out, code = annexctl("adopt", "olm", "memcached", "-n", "operators", "--dry-run")
	for _, want := range []string{
		"OLM Subscription operators/memcached on the hub cluster: package memcached-operator, channel alpha, ClusterServiceVersion memcached-operator.v0.2.0 (Succeeded), watching all namespaces",
		"InstallPlans: install-abc",
		"Bundle memcached-operator 0.2.0: Extension memcached-operator, catalog operatorhub",
		"Nothing was changed (dry run)",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("dry run: exit %d, lacks %q\n%s", code, want, out)
		}
	}
	var insts v1alpha1.ExtensionInstallationList
	if err := env.Client.List(ctx, &insts); err != nil || len(insts.Items) != 0 {
		t.Errorf("a dry run created %d installations (err=%v)", len(insts.Items), err)
	}
	sub := olmv0.Object(olmv0.Subscription, "operators", "memcached", nil)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(sub), sub); err != nil {
		t.Errorf("a dry run deleted the Subscription: %v", err)
	}
}
