// Package withmanager runs a test package against a real API server with
// the whole Annex manager running, as the controllers' integration tests
// need. It lives apart from testenv so that testenv does not depend on the
// controllers.
package withmanager

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/testenv"
)

// Main is a TestMain: it starts kube-apiserver and etcd, runs the Annex
// manager against them (health polled every 200 ms, clusters probed every
// second, its caches in a temporary folder), points *env at the environment, runs the tests, and stops
// everything. Logs go to stderr when ANNEX_TEST_LOG is set.
func Main(m *testing.M, env **testenv.Env) {
	os.Exit(run(m, env, nil))
}

// MainWith is Main with the manager's options changed by configure, for
// tests of a manager run another way (multi-tenant mode).
func MainWith(m *testing.M, env **testenv.Env, configure func(*manager.Options)) {
	os.Exit(run(m, env, configure))
}

func run(m *testing.M, env **testenv.Env, configure func(*manager.Options)) int {
	logs := io.Discard
	if os.Getenv("ANNEX_TEST_LOG") != "" {
		logs = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
	cache, err := os.MkdirTemp("", "annex-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(cache)
	e, stop, err := testenv.StartShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	*env = e
	opts := manager.Options{
		MetricsAddr: "0", HealthPollInterval: 200 * time.Millisecond, CacheDir: cache,
		// Clusters are probed often, so that tests see them come and go.
		ClusterVersionInterval: time.Second,
	}
	if configure != nil {
		configure(&opts)
	}
	mgr, err := manager.New(e.Config, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
	}
	return code
}
