package bench

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/scheme"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// BenchmarkDevN300 times the path a user runs: `annex dev` (its own local
// control plane with kube-controller-manager, scheduler and kwok, the
// manager in the same process) starting, then 300 installations of the
// system benchmark's chart from creation to Ready and from deletion to
// gone. Before clients were built alike, annex dev's manager was held to
// client-go's 5 requests per second and 300 installations took minutes.
// Its baseline runs first on the same control plane (rawOnDev): a plain
// client creating and deleting the same 300 apps' objects, so that the
// ratios (x-ready-vs-raw, x-delete-vs-raw) compare runs on one machine
// under one load.
func BenchmarkDevN300(b *testing.B) {
	const n = 300
	ctx := b.Context()
	kubeconfig, startup := startDev(b, "--nodes", "1")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	must(b, err)
	cfg.QPS = -1
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	must(b, err)
	repo := helmrepo.NewServer(b, benchChart())
	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}))
	createCatalog(b, c, repo.URL())
	rawReady, rawDelete := rawOnDev(b, c, n)

	b.ResetTimer()
	begin := time.Now()
	must(b, parallel(n, func(i int) error { return c.Create(ctx, installation(i)) }))
	must(b, waitInstallations(ctx, c, n, 3*time.Minute, func(ready, total int) bool { return ready == n }))
	toReady := time.Since(begin)
	begin = time.Now()
	must(b, parallel(n, func(i int) error { return client.IgnoreNotFound(c.Delete(ctx, installation(i))) }))
	must(b, waitInstallations(ctx, c, n, 3*time.Minute, func(ready, total int) bool { return total == 0 }))
	toDelete := time.Since(begin)
	b.StopTimer()
	b.ReportMetric(startup.Seconds(), "s-to-start")
	b.ReportMetric(toReady.Seconds(), "s-to-ready")
	b.ReportMetric(toDelete.Seconds(), "s-to-delete")
	b.ReportMetric(rawReady.Seconds(), "s-raw-ready")
	b.ReportMetric(rawDelete.Seconds(), "s-raw-delete")
	b.ReportMetric(toReady.Seconds()/rawReady.Seconds(), "x-ready-vs-raw")
	b.ReportMetric(toDelete.Seconds()/rawDelete.Seconds(), "x-delete-vs-raw")
	b.Logf("annex dev: started in %.1f s; %d installations Ready in %.2f s (raw %.2f s, %.1f×), gone in %.2f s (raw %.2f s, %.1f×); loadavg %s",
		startup.Seconds(), n, toReady.Seconds(), rawReady.Seconds(), toReady.Seconds()/rawReady.Seconds(),
		toDelete.Seconds(), rawDelete.Seconds(), toDelete.Seconds()/rawDelete.Seconds(), loadavg())
}

// rawOnDev is BenchmarkDevN300's baseline: a plain client creates the n
// apps' objects (appObjects, what the chart renders) in namespace raw,
// then deletes them. Ready is when the creates returned: the chart's
// Deployment has zero replicas, which an installation's Ready does not
// wait on its controller for either (apply's objectStatus: scaled to
// zero is Current), and gone when the deletes returned (nothing holds a
// finalizer). It returns the two times.
func rawOnDev(b *testing.B, c client.Client, n int) (toReady, toDelete time.Duration) {
	b.Helper()
	ctx := b.Context()
	const ns = "raw"
	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	each := func(op func(client.Object) error) time.Duration {
		start := time.Now()
		must(b, parallel(n, func(i int) error {
			for _, o := range appObjects(ns, i) {
				if err := op(o); err != nil {
					return fmt.Errorf("%s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
				}
			}
			return nil
		}))
		return time.Since(start)
	}
	toReady = each(func(o client.Object) error { return c.Create(ctx, o) })
	toDelete = each(func(o client.Object) error { return c.Delete(ctx, o) })
	return toReady, toDelete
}

// startDev runs `annex dev` (with args) in a temporary folder until the
// benchmark ends, waits until it says it is running, and returns its
// admin kubeconfig and how long it took to start.
func startDev(b *testing.B, args ...string) (kubeconfig string, startup time.Duration) {
	b.Helper()
	binDir := testenv.RequireWorkloadsBinDir(b)
	dir := filepath.Join(b.TempDir(), "dev")
	var out safeBuffer
	start := time.Now()
	dev := exec.Command(binary(b, "annex"), append([]string{"dev", "--dir", dir, "--bin-dir", binDir}, args...)...)
	dev.Stdout, dev.Stderr = &out, &out
	must(b, dev.Start())
	b.Cleanup(func() {
		_ = dev.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = dev.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = dev.Process.Kill()
		}
		if b.Failed() {
			b.Logf("annex dev output:\n%s", out.String())
		}
	})
	waitUntil(b, 2*time.Minute, func() error {
		if !strings.Contains(out.String(), "Annex is running") {
			return fmt.Errorf("annex dev has not said it is running")
		}
		return nil
	})
	return filepath.Join(dir, "kubeconfig"), time.Since(start)
}

// safeBuffer is a bytes.Buffer a process writes to while the benchmark
// reads it.
type safeBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
