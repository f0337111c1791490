package faults

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// TestAPIServerRestartMidRollout stops kube-apiserver while 20
// installations are being applied and starts it again a few seconds later:
// the rollout finishes by itself, with nothing orphaned.
func TestAPIServerRestartMidRollout(t *testing.T) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lc, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), BinDir: testenv.RequireBinDir(t), Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lc.Stop() })
	cfg := lc.RESTConfig()
	must(t, manager.InstallCRDs(ctx, cfg, time.Minute))
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	must(t, err)

	const n = 20
	var charts []helmrepo.Chart
	for i := 0; i < n; i++ {
		charts = append(charts, app(fmt.Sprintf("app-%02d", i), "1.0.0"))
	}
	repo := helmrepo.NewServer(t, charts...)
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	must(t, c.Create(ctx, &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: "faults"},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}},
	}))
	mgr, err := manager.New(cfg, manager.Options{MetricsAddr: "0", HealthPollInterval: 200 * time.Millisecond, CacheDir: t.TempDir()})
	must(t, err)
	go func() { _ = mgr.Start(ctx) }()

	// Wait for the catalog, then start the rollout.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var exts v1alpha1.ExtensionList
		if err := c.List(ctx, &exts); err == nil && len(exts.Items) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the catalog was not synced")
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := map[string]string{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("app-%02d", i)
		must(t, c.Create(ctx, &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
			Spec:       v1alpha1.ExtensionInstallationSpec{Extension: name, Version: "1.0.x"},
		}))
		want[name] = "1.0.x"
	}

	// Mid-rollout: some installations are applied, others are not yet.
	time.Sleep(300 * time.Millisecond)
	must(t, lc.StopAPIServer())
	time.Sleep(3 * time.Second)
	must(t, lc.StartAPIServer(ctx, ""))

	requireConverged(t, ctx, c, namespace, want, 3*time.Minute)
}
