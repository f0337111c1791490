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
	b.Logf("annex dev: started in %.1f s; %d installations Ready in %.2f s, gone in %.2f s; loadavg %s",
		startup.Seconds(), n, toReady.Seconds(), toDelete.Seconds(), loadavg())
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
