package e2e

import (
	"context"
	"io"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/localcluster"
	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/scheme"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// TestClusterUpgradeUpgradesExtension runs a v1.36 kube-apiserver, installs
// an extension whose newest version needs Kubernetes 1.37, then restarts the
// API server as v1.37 on the same etcd data: Annex observes the new version
// through discovery and upgrades the extension.
func TestClusterUpgradeUpgradesExtension(t *testing.T) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	oldBin, newBin := testenv.RequirePreviousBinDir(t), testenv.RequireBinDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	lc, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), BinDir: oldBin, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lc.Stop() })
	cfg := lc.RESTConfig()
	if err := manager.InstallCRDs(ctx, cfg, time.Minute); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}

	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {version: {{ .Chart.Version | quote }}}\n"
	repo := helmrepo.NewServer(t,
		helmrepo.Chart{Name: "kv", Version: "1.0.0", KubeVersion: ">=1.30.0-0", Files: map[string]string{"templates/cm.yaml": cm}},
		helmrepo.Chart{Name: "kv", Version: "2.0.0", KubeVersion: ">=1.37.0-0", Files: map[string]string{"templates/cm.yaml": cm}},
	)
	if err := c.Create(ctx, &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: "charts"},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}},
	}); err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(cfg, manager.Options{MetricsAddr: "0", HealthPollInterval: 200 * time.Millisecond, ClusterVersionInterval: time.Second, CacheDir: t.TempDir(), SeveralPerProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kv"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "kv"},
	}
	if err := c.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	waitInstalled := func(version, clusterVersion string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			got := &v1alpha1.ExtensionInstallation{}
			err := c.Get(ctx, client.ObjectKeyFromObject(inst), got)
			if err == nil && got.Status.InstalledVersion == version && got.Status.ClusterVersion == clusterVersion &&
				meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("want %s on Kubernetes %s; got %+v (err=%v)", version, clusterVersion, got.Status, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	oldVersion, _ := testenv.PreviousKubeVersion()
	newVersion, _ := testenv.KubeVersion()
	waitInstalled("1.0.0", "v"+oldVersion)

	// Upgrade the cluster for real: same etcd, newer kube-apiserver.
	if err := lc.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if err := lc.StartAPIServer(ctx, newBin); err != nil {
		t.Fatal(err)
	}
	waitInstalled("2.0.0", "v"+newVersion)
	got := &v1alpha1.ExtensionInstallation{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(inst), got); err != nil {
		t.Fatal(err)
	}
	if n := len(got.Status.History); n != 2 {
		t.Fatalf("history %d revisions, want 2: %+v", n, got.Status.History)
	}
	t.Logf("cluster upgrade: kv 1.0.0 on %s → kv 2.0.0 on %s", oldVersion, newVersion)
}
