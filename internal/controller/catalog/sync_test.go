package catalog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// TestSyncRequested: a new value of annex.dev/sync-requested-at (what
// annexctl catalog sync writes) syncs a catalog at once, long before its
// interval.
func TestSyncRequested(t *testing.T) {
	repo := helmrepo.NewServer(t, configChart("sync-app", "1.0.0", "first"))
	createCatalog(t, "sync", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}},
		func(c *v1alpha1.Catalog) { c.Spec.Interval = metav1.Duration{Duration: time.Hour} })
	waitCatalogReady(t, "sync")

	repo.Add(t, configChart("sync-app", "1.1.0", "second"))
	if err := cli.SyncCatalog(context.Background(), env.Client, "sync", time.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		if got := versionsOf("sync-app"); got != "1.1.0@sync 1.0.0@sync" {
			return fmt.Errorf("versions %s", got)
		}
		return nil
	})
}
