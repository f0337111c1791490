package catalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// TestSyncRequested: a new value of annex.dev/sync-requested-at (what
// annexctl catalog sync writes) syncs a catalog at once, long before its
// interval, and the catalog says it answered that request
// (status.lastHandledSyncRequest) only once its Extensions are written:
// cli.WaitCatalog then returns, and annexctl catalog sync --wait with it.
// A request the sync fails to serve is answered too, with Ready False.
func TestSyncRequested(t *testing.T) {
	ctx := context.Background()
	repo := helmrepo.NewServer(t, configChart("sync-app", "1.0.0", "first"))
	createCatalog(t, "sync", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}},
		func(c *v1alpha1.Catalog) { c.Spec.Interval = metav1.Duration{Duration: time.Hour} })
	if err := cli.WaitCatalog(ctx, env.Client, "sync", "", 30*time.Second); err != nil {
		t.Fatal(err)
	}

	repo.Add(t, configChart("sync-app", "1.1.0", "second"))
	request, err := cli.SyncCatalog(ctx, env.Client, "sync", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.WaitCatalog(ctx, env.Client, "sync", request, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := versionsOf("sync-app"); got != "1.1.0@sync 1.0.0@sync" {
		t.Fatalf("the sync was answered, yet the versions are %s", got)
	}

	// A catalog whose source is gone: the answer is the failure.
	createCatalog(t, "sync-gone", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: "http://127.0.0.1:1/charts"}},
		func(c *v1alpha1.Catalog) { c.Spec.Interval = metav1.Duration{Duration: time.Hour} })
	request, err = cli.SyncCatalog(ctx, env.Client, "sync-gone", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	err = cli.WaitCatalog(ctx, env.Client, "sync-gone", request, 30*time.Second)
	if cli.ExitCode(err) != cli.ExitError || !strings.Contains(fmt.Sprint(err), `catalog "sync-gone" did not sync: FetchFailed: spec.source.helm.url http://127.0.0.1:1/charts`) {
		t.Fatalf("waiting for a failing sync: exit %d: %v", cli.ExitCode(err), err)
	}
}
