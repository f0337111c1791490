package manager_test

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/testenv"
)

// annex dev hands New its local cluster's configuration, which sets no
// rate limit: the manager's clients must not fall back to client-go's 5
// requests per second (300 installations took 2 minutes to become Ready
// that way, where `annex manager` needed seconds).
func TestNewLiftsClientSideRateLimit(t *testing.T) {
	env := testenv.Start(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 0, 0 // as localcluster.RESTConfig leaves them
	mgr, err := manager.New(cfg, manager.Options{MetricsAddr: "0", CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if qps := mgr.GetConfig().QPS; qps != -1 {
		t.Fatalf("the manager's clients have QPS %v, want -1 (no client-side limit)", qps)
	}
}
