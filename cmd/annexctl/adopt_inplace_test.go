package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// adopt helm without --dry-run, against a real API server with the Annex
// manager running: the installation it writes adopts the release in
// place, and what it refuses it refuses before writing anything.
func TestAdoptHelmInPlace(t *testing.T) {
	env := testenv.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := manager.New(env.Config, manager.Options{
		MetricsAddr: "0", HealthPollInterval: 200 * time.Millisecond, CacheDir: t.TempDir(), ClusterVersionInterval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	// The helm CLI's field manager, which adoption hands over to Annex's.
	old := kube.ManagedFieldsManager
	kube.ManagedFieldsManager = "helm"
	t.Cleanup(func() { kube.ManagedFieldsManager = old })

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}); err != nil {
		t.Fatal(err)
	}
	repo := helmrepo.NewServer(t, webChart)
	if err := env.Client.Create(ctx, &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "charts"},
		Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for env.Client.Get(ctx, client.ObjectKey{Name: "web"}, &v1alpha1.Extension{}) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the catalog did not publish Extension web")
		}
		time.Sleep(100 * time.Millisecond)
	}
	annexctl := func(args ...string) (string, int) {
		return run(t, "annexctl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}

	// Scaled to 0: healthy without a kube-controller-manager.
	helmInstall(t, kubeconfig, "secret", "team-a", "web", webChart, map[string]any{"replicas": 0, "message": "hi"})
	var dep appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web"}, &dep); err != nil {
		t.Fatal(err)
	}
	out, code := annexctl("adopt", "helm", "web", "-n", "team-a", "--dry-run")
	if code != 0 || !strings.Contains(out, "3 same, 0 differ, 0 missing, 0 extra;") || !strings.Contains(out, "Nothing was changed (dry run)") {
		t.Fatalf("adopt helm --dry-run: exit %d\n%s", code, out)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web"}, &v1alpha1.ExtensionInstallation{}); !apierrors.IsNotFound(err) {
		t.Fatalf("--dry-run wrote an installation (err=%v)", err)
	}

	out, code = annexctl("adopt", "helm", "web", "-n", "team-a")
	for _, want := range []string{
		"3 same, 0 differ, 0 missing, 0 extra;",
		"ExtensionInstallation team-a/web created: it adopts the release\n",
		fmt.Sprintf("kept     Deployment.apps team-a/web (uid %s, unchanged)\n", dep.UID),
		"Adopted Helm release team-a/web revision 1 (web 1.0.0) in place as ExtensionInstallation team-a/web, revision 1: 3 objects, each kept with its UID.\n",
		"Helm's storage of the release (sh.helm.release.v1.web.v* in team-a) is deleted: helm list no longer shows it",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("adopt helm: exit %d, no %q in\n%s", code, want, out)
		}
	}
	inst := &v1alpha1.ExtensionInstallation{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web"}, inst); err != nil {
		t.Fatal(err)
	}
	if inst.Spec.Extension != "web" || inst.Spec.Version != "1.0.0" || string(inst.Spec.Values.Raw) != `{"message":"hi","replicas":0}` ||
		inst.Spec.Adopt == nil || inst.Spec.Adopt.Helm.Release != "web" {
		t.Errorf("the installation written: %+v", inst.Spec)
	}
	var after appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web"}, &after); err != nil {
		t.Fatal(err)
	}
	if after.UID != dep.UID || after.Generation != dep.Generation {
		t.Errorf("Deployment: uid %s generation %d, was %s %d", after.UID, after.Generation, dep.UID, dep.Generation)
	}
	var storage corev1.SecretList
	if err := env.Client.List(ctx, &storage, client.InNamespace("team-a"), client.MatchingLabels{"owner": "helm"}); err != nil || len(storage.Items) != 0 {
		t.Errorf("Helm's storage: %d Secrets left (err=%v)", len(storage.Items), err)
	}
	out, code = annexctl("status", "-n", "team-a")
	if code != 0 || !strings.Contains(out, "adopted from Helm release team-a/web revision 1 (web 1.0.0)") {
		t.Errorf("status: exit %d\n%s", code, out)
	}

	// A pending-upgrade release is refused before anything is written.
	cfg := helmInstall(t, kubeconfig, "secret", "team-a", "site", webChart, map[string]any{"replicas": 0})
	last, err := cfg.Releases.Last("site")
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
	out, code = annexctl("adopt", "helm", "site", "-n", "team-a")
	if code != cli.ExitError || !strings.Contains(out, "its latest revision 2 is pending-upgrade") ||
		!strings.Contains(out, "kubectl delete secret sh.helm.release.v1.site.v2 -n team-a") {
		t.Errorf("adopt helm of a pending-upgrade release: exit %d\n%s", code, out)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "site"}, &v1alpha1.ExtensionInstallation{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused adoption wrote an installation (err=%v)", err)
	}
	// So is a chart in no catalog, naming the catalogs searched.
	other := helmrepo.Chart{Name: "other", Version: "0.1.0", Files: map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"}}
	helmInstall(t, kubeconfig, "secret", "team-a", "other", other, nil)
	out, code = annexctl("adopt", "helm", "other", "-n", "team-a")
	if code != cli.ExitError || !strings.Contains(out, `is in no catalog: searched catalogs charts, none offers Extension "other"`) {
		t.Errorf("adopt helm of a chart in no catalog: exit %d\n%s", code, out)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "other"}, &v1alpha1.ExtensionInstallation{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused adoption wrote an installation (err=%v)", err)
	}
}
