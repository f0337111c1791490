package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/apply/reqcount"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// adoptCountEnv sets how many releases BenchmarkAdopt adopts (default 100).
const adoptCountEnv = "ANNEX_ADOPT_N"

// BenchmarkAdopt compares, on one API server and one `annex manager`,
// installing N releases of the benchmark chart (4 objects) fresh with
// adopting N releases of it that the Helm SDK installed (spec.adopt.helm):
// the time until all are Ready and the manager's requests and writes per
// installation. Run with -benchtime 1x.
func BenchmarkAdopt(b *testing.B) {
	if b.N > 1 {
		b.Fatal("run with -benchtime 1x: one run takes minutes and starts its own API server")
	}
	n := 100
	if v, err := strconv.Atoi(os.Getenv(adoptCountEnv)); err == nil && v > 0 {
		n = v
	}
	ctx := b.Context()
	c, meter, _, _, kubeconfig := startSystemAt(b)
	b.ResetTimer()

	// Fresh: n installations, then their uninstall (not measured).
	fresh, freshKinds, freshTime := measure(b, meter, func() {
		if err := parallel(n, func(i int) error { return c.Create(ctx, installation(i)) }); err != nil {
			b.Fatal(err)
		}
		waitAllReady(b, c, n)
	})
	deleteInstallations(b, c, n)

	// Adopted: the same n releases made by Helm first, then taken over.
	b.StopTimer()
	helmStart := time.Now()
	helmInstallAll(b, kubeconfig, n)
	helmTime := time.Since(helmStart)
	b.StartTimer()
	adopted, adoptedKinds, adoptTime := measure(b, meter, func() {
		if err := parallel(n, func(i int) error { return c.Create(ctx, adopting(i)) }); err != nil {
			b.Fatal(err)
		}
		waitAllReady(b, c, n)
	})
	for i := range n {
		var inst v1alpha1.ExtensionInstallation
		if err := c.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: fmt.Sprintf("app-%d", i)}, &inst); err != nil {
			b.Fatal(err)
		}
		if inst.Status.AdoptedFrom == nil {
			b.Fatalf("installation %s is Ready but adopted nothing", inst.Name)
		}
	}
	b.StopTimer()

	per := func(cn reqcount.Counts) (float64, float64) {
		return float64(cn.Total) / float64(n), float64(cn.Writes) / float64(n)
	}
	freshReq, freshWrites := per(fresh)
	adoptReq, adoptWrites := per(adopted)
	b.ReportMetric(freshTime.Seconds(), "s-fresh")
	b.ReportMetric(adoptTime.Seconds(), "s-adopt")
	b.ReportMetric(freshReq, "fresh-req/inst")
	b.ReportMetric(freshWrites, "fresh-writes/inst")
	b.ReportMetric(adoptReq, "adopt-req/inst")
	b.ReportMetric(adoptWrites, "adopt-writes/inst")
	b.ReportMetric(0, "ns/op")
	b.Logf("N=%d fresh: Ready in %s, %.2f requests (%.2f writes) per installation: %s", n, freshTime.Round(time.Millisecond), freshReq, freshWrites, formatKinds(freshKinds[0], freshKinds[1]))
	b.Logf("N=%d adopted (after helm install ×%d in %s): Ready in %s, %.2f requests (%.2f writes) per installation: %s; loadavg %s",
		n, n, helmTime.Round(time.Millisecond), adoptTime.Round(time.Millisecond), adoptReq, adoptWrites, formatKinds(adoptedKinds[0], adoptedKinds[1]), loadavg())
}

// measure runs f and returns the manager's requests during it, by kind
// (before and after, nil without the counting proxy) and its duration.
func measure(b *testing.B, meter requestMeter, f func()) (reqcount.Counts, [2]map[string]int, time.Duration) {
	b.Helper()
	before, kindsBefore := meter.Snapshot(), meter.Kinds()
	start := time.Now()
	f()
	took := time.Since(start)
	return meter.Snapshot().Sub(before), [2]map[string]int{kindsBefore, meter.Kinds()}, took
}

func waitAllReady(b *testing.B, c client.WithWatch, n int) {
	b.Helper()
	if err := waitInstallations(b.Context(), c, n, 2*time.Minute+time.Duration(n)*300*time.Millisecond, func(ready, total int) bool {
		return ready == n
	}); err != nil {
		b.Fatal(err)
	}
}

// deleteInstallations deletes installations app-0 … app-(n-1) and waits until they
// are gone.
func deleteInstallations(b *testing.B, c client.WithWatch, n int) {
	b.Helper()
	ctx := b.Context()
	if err := parallel(n, func(i int) error { return client.IgnoreNotFound(c.Delete(ctx, installation(i))) }); err != nil {
		b.Fatal(err)
	}
	if err := waitInstallations(ctx, c, n, 2*time.Minute+time.Duration(n)*300*time.Millisecond, func(_, total int) bool {
		return total == 0
	}); err != nil {
		b.Fatal(err)
	}
}

// adopting is installation i adopting the Helm release of its name.
func adopting(i int) *v1alpha1.ExtensionInstallation {
	inst := installation(i)
	inst.Spec.Version = "1.0.0"
	inst.Spec.Adopt = &v1alpha1.Adoption{Helm: &v1alpha1.HelmReleaseAdoption{Release: inst.Name}}
	return inst
}

// helmInstallAll installs the benchmark chart as releases app-0 …
// app-(n-1) in benchNamespace with the Helm v4 SDK, 10 at a time, as
// `helm install` does.
func helmInstallAll(b *testing.B, kubeconfig string, n int) {
	b.Helper()
	if err := parallelOn(10, n, func(i int) error {
		// The field manager the helm CLI writes under.
		_, err := helmrepo.Install(context.Background(), kubeconfig, "secret", benchNamespace, benchNamespace, fmt.Sprintf("app-%d", i), "helm", benchChart(), nil)
		return err
	}); err != nil {
		b.Fatal(err)
	}
}
