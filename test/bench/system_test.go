package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/apply/reqcount"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

const (
	// benchNamespace holds the installations and what they install.
	benchNamespace = "bench"
	// resyncInterval is the installations' spec.interval, short so that
	// the idle window covers several resyncs and drift checks.
	resyncInterval = 10 * time.Second
	// idleWindow is how long the manager is watched doing nothing.
	idleWindow = 60 * time.Second
	// pollEvery is how often progress is listed.
	pollEvery = 250 * time.Millisecond
)

// BenchmarkSystem is the full-system benchmark: for N apps it
// measures, each against its own fresh API server, the plain client
// (raw), Annex's requests sent without a manager (proto), `annex manager`
// as a subprocess (annex) and the Helm CLI (helm), then prints a table
// comparing them. annex reads the chart from an HTTP Helm repository;
// annex-oci reads it from an in-process OCI registry, and annex-signed
// from the same registry with the chart signed and the catalog under an
// Enforce cosign policy, so that the two show what verification costs. CRD1K measures the manager's memory
// with 1,000 CRDs in the cluster. Select one size with -bench System/N100.
func BenchmarkSystem(b *testing.B) {
	for _, n := range []int{100, 500, 1000} {
		b.Run(sizeName(n), func(b *testing.B) {
			b.Run("raw", func(b *testing.B) { benchRaw(b, n) })
			b.Run("proto", func(b *testing.B) { benchProtocol(b, n) })
			b.Run("annex", func(b *testing.B) { benchAnnex(b, n, fromHelmRepository) })
			b.Run("annex-oci", func(b *testing.B) { benchAnnex(b, n, fromRegistry) })
			b.Run("annex-signed", func(b *testing.B) { benchAnnex(b, n, fromRegistrySigned) })
			b.Run("helm", func(b *testing.B) { benchHelm(b, n) })
		})
	}
	b.Run("CRD1K", func(b *testing.B) { benchCRDs(b, 1000) })
}

func sizeName(n int) string {
	if n%1000 == 0 {
		return fmt.Sprintf("N%dK", n/1000)
	}
	return fmt.Sprintf("N%d", n)
}

// proxyEnv names an environment variable: when it is set, the system
// benchmark's manager talks to the API server through the counting proxy,
// which logs its requests by kind (for finding which ones to cut) at the
// cost of the proxy's own CPU on the same cores, which slows what is
// timed. Otherwise the manager talks to the API server directly, as it
// does for users, and its requests are counted by its own client metrics.
const proxyEnv = "ANNEX_BENCH_PROXY"

// requestMeter counts the manager's requests to the API server.
type requestMeter interface {
	// Snapshot returns the counts so far.
	Snapshot() reqcount.Counts
	// Kinds returns the counts so far by "METHOD resource", or nil when
	// the meter does not know the resources.
	Kinds() map[string]int
}

// startSystem starts an API server, the benchmark chart's Helm repository
// and a Catalog of it, and `annex manager`, talking to the API server
// directly (or through the counting proxy, see proxyEnv). It returns a
// client without rate limits, the meter of the manager's requests, the
// proxy (which also reaches the API server's profiles) and the manager.
func startSystem(b *testing.B) (client.WithWatch, requestMeter, *countingProxy, *manager) {
	b.Helper()
	c, meter, proxy, mgr, _ := startSystemFrom(b, fromHelmRepository)
	return c, meter, proxy, mgr
}

// startSystemAt is startSystem that also returns the path of an admin
// kubeconfig of the API server, for clients of the benchmark's own.
func startSystemAt(b *testing.B) (client.WithWatch, requestMeter, *countingProxy, *manager, string) {
	b.Helper()
	return startSystemFrom(b, fromHelmRepository)
}

// startSystemFrom is startSystemAt with the chart served from src.
func startSystemFrom(b *testing.B, src chartSource) (client.WithWatch, requestMeter, *countingProxy, *manager, string) {
	b.Helper()
	env := testenv.Start(b)
	work := b.TempDir()
	c, err := client.NewWithWatch(unlimited(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	proxy := startProxy(b, env.Config)
	kubeconfig := filepath.Join(work, "kubeconfig")
	var meter requestMeter = proxy
	var extra []string
	if os.Getenv(proxyEnv) != "" {
		err = proxy.WriteKubeconfig(kubeconfig)
	} else {
		err = env.WriteKubeconfig(kubeconfig)
		addr := freeAddress(b)
		extra = []string{"--metrics-bind-address", addr}
		meter = &clientMetrics{b: b, addr: addr}
	}
	if err != nil {
		b.Fatal(err)
	}
	catalogSpec := serveChart(b, src)
	createNamespace(b, c, benchNamespace)
	mgr := startManager(b, work, kubeconfig, extra...)
	createCatalogOf(b, c, catalogSpec)
	admin := filepath.Join(work, "admin.kubeconfig")
	if err := env.WriteKubeconfig(admin); err != nil {
		b.Fatal(err)
	}
	return c, meter, proxy, mgr, admin
}

// benchAnnex installs n ExtensionInstallations of the benchmark chart
// through `annex manager`, the chart served from src, waits until all are
// Ready, watches the idle manager for idleWindow, and deletes them all.
func benchAnnex(b *testing.B, n int, src chartSource) {
	if b.N > 1 {
		b.Fatal("run with -benchtime 1x: one run takes minutes and starts its own API server")
	}
	ctx := b.Context()
	c, meter, proxy, mgr, _ := startSystemFrom(b, src)

	startRSS := mgr.RSS(b)
	before, kindsBefore := meter.Snapshot(), meter.Kinds()
	cpuBefore, apiBefore := mgr.CPU(b), controlPlaneCPU(b)
	b.ResetTimer()
	start := time.Now()
	proxy.ProfileAPIServer(b, apiserverProfileEnv, 20*time.Second)
	if err := parallel(n, func(i int) error { return c.Create(ctx, installation(i)) }); err != nil {
		b.Fatal(err)
	}
	if err := waitInstallations(ctx, c, n, 2*time.Minute+time.Duration(n)*300*time.Millisecond, func(ready, total int) bool {
		return ready == n
	}); err != nil {
		b.Fatal(err)
	}
	toReady := time.Since(start)
	b.StopTimer()
	install := meter.Snapshot().Sub(before)
	installCPU, apiInstall := mgr.CPU(b)-cpuBefore, controlPlaneCPU(b)-apiBefore
	b.Logf("N=%d install: %s to Ready; manager requests: %s", n, toReady.Round(time.Millisecond), formatKinds(kindsBefore, meter.Kinds()))
	if src == fromRegistrySigned {
		requireVerified(b, c, n)
	}

	// Nothing changes: every write now is a cost of standing still.
	before, kindsBefore = meter.Snapshot(), meter.Kinds()
	time.Sleep(idleWindow)
	idle := meter.Snapshot().Sub(before)
	resyncs := idleWindow.Seconds() / resyncInterval.Seconds()
	idleWritesPerHour := float64(idle.Writes) / float64(n) / idleWindow.Hours()
	b.Logf("N=%d idle %s (spec.interval %s, %.0f resyncs): manager requests: %s", n, idleWindow, resyncInterval, resyncs, formatKinds(kindsBefore, meter.Kinds()))

	before, kindsBefore = meter.Snapshot(), meter.Kinds()
	apiBefore = controlPlaneCPU(b)
	b.StartTimer()
	start = time.Now()
	proxy.ProfileAPIServer(b, apiserverUninstallProfileEnv, 20*time.Second)
	if err := parallel(n, func(i int) error { return client.IgnoreNotFound(c.Delete(ctx, installation(i))) }); err != nil {
		b.Fatal(err)
	}
	if err := waitInstallations(ctx, c, n, 2*time.Minute+time.Duration(n)*300*time.Millisecond, func(ready, total int) bool {
		return total == 0
	}); err != nil {
		b.Fatal(err)
	}
	toDelete := time.Since(start)
	b.StopTimer()
	uninstall, apiDelete := meter.Snapshot().Sub(before), controlPlaneCPU(b)-apiBefore
	b.Logf("N=%d uninstall: %s; manager requests: %s", n, toDelete.Round(time.Millisecond), formatKinds(kindsBefore, meter.Kinds()))
	requireNoApps(b, c)

	peak := mgr.Peak(b)
	r := result{
		toReady: toReady, toDelete: toDelete, peakMiB: peak,
		reqPerInstall: float64(install.Total) / float64(n), writesPerInstall: float64(install.Writes) / float64(n),
		reqPerDelete: float64(uninstall.Total) / float64(n),
		apiInstall:   apiInstall / time.Duration(n), apiDelete: apiDelete / time.Duration(n),
		idleWritesPerHour: idleWritesPerHour, load: loadavg(),
	}
	b.ReportMetric(startRSS, "start-MiB")
	b.ReportMetric(float64(idle.Total)/float64(n)/resyncs, "idle-req/install/resync")
	b.ReportMetric(installCPU.Seconds(), "mgr-cpu-s-to-ready")
	report(b, n, src.system(), r)
}

// installation is installation i of the benchmark chart.
func installation(i int) *v1alpha1.ExtensionInstallation {
	return &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: fmt.Sprintf("app-%d", i)},
		Spec: v1alpha1.ExtensionInstallationSpec{
			Extension: chartName,
			Version:   "1.x",
			Interval:  metav1.Duration{Duration: resyncInterval},
		},
	}
}

// createCatalog creates a Catalog for the repository at url and waits
// until the manager has synced it: the benchmark times installations, not
// the first catalog sync.
func createCatalog(b *testing.B, c client.Client, url string) {
	b.Helper()
	createCatalogOf(b, c, v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: url}}})
}

// createCatalogOf is createCatalog for any catalog spec.
func createCatalogOf(b *testing.B, c client.Client, spec v1alpha1.CatalogSpec) {
	b.Helper()
	ctx := b.Context()
	if err := c.Create(ctx, &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: spec}); err != nil {
		b.Fatal(err)
	}
	url := describeSource(spec.Source)
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.Get(ctx, client.ObjectKey{Name: chartName}, &v1alpha1.Extension{})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("Extension %s did not appear within a minute of creating Catalog bench (%s): %v", chartName, url, err)
		}
		time.Sleep(pollEvery)
	}
}

// waitInstallations follows the installations until done says so, given
// how many are Ready for their current generation and how many exist. It
// lists them once and then watches: listing a thousand installations every
// few hundred milliseconds would cost the API server enough to slow down
// what is measured. It logs progress every 30 s and fails after timeout.
func waitInstallations(ctx context.Context, c client.WithWatch, n int, timeout time.Duration, done func(ready, total int) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	lastLog := start
	ready := map[string]bool{} // by name: Ready for its generation
	count := func() int {
		r := 0
		for _, ok := range ready {
			if ok {
				r++
			}
		}
		return r
	}
	for {
		var list v1alpha1.ExtensionInstallationList
		if err := c.List(ctx, &list, client.InNamespace(benchNamespace)); err != nil {
			return fmt.Errorf("after %s: %d of %d installations exist, %d Ready; see the manager log (%w)", time.Since(start).Round(time.Second), len(ready), n, count(), err)
		}
		clear(ready)
		for i := range list.Items {
			ready[list.Items[i].Name] = readyNow(&list.Items[i])
		}
		if done(count(), len(ready)) {
			return nil
		}
		w, err := c.Watch(ctx, &v1alpha1.ExtensionInstallationList{}, client.InNamespace(benchNamespace),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			inst, ok := ev.Object.(*v1alpha1.ExtensionInstallation)
			if !ok {
				break // an error event: list again
			}
			if ev.Type == watch.Deleted {
				delete(ready, inst.Name)
			} else {
				ready[inst.Name] = readyNow(inst)
			}
			if done(count(), len(ready)) {
				w.Stop()
				return nil
			}
			if time.Since(lastLog) > 30*time.Second {
				fmt.Fprintf(os.Stderr, "    %s: %d installations exist, %d Ready (load %s)\n", time.Since(start).Round(time.Second), len(ready), count(), loadavg())
				lastLog = time.Now()
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return fmt.Errorf("after %s: %d of %d installations exist, %d Ready; see the manager log", timeout, len(ready), n, count())
		}
	}
}

// readyNow reports whether inst is Ready for its current generation.
func readyNow(inst *v1alpha1.ExtensionInstallation) bool {
	cond := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	return cond != nil && cond.Status == metav1.ConditionTrue && inst.Status.ObservedGeneration == inst.Generation
}

// requireNoApps fails when a Service or Deployment of the benchmark is
// left behind.
func requireNoApps(b *testing.B, c client.Client) {
	b.Helper()
	var services corev1.ServiceList
	if err := c.List(b.Context(), &services, client.InNamespace(benchNamespace)); err != nil {
		b.Fatal(err)
	}
	var deployments appsv1.DeploymentList
	if err := c.List(b.Context(), &deployments, client.InNamespace(benchNamespace)); err != nil {
		b.Fatal(err)
	}
	if left := len(services.Items) + len(deployments.Items); left > 0 {
		b.Fatalf("%d Services and %d Deployments are left in namespace %s after every app was deleted",
			len(services.Items), len(deployments.Items), benchNamespace)
	}
}

// benchHelm runs `helm install` for n releases of the benchmark chart, 10
// at a time, then `helm uninstall` for each. Neither waits: without a
// kube-controller-manager a Deployment never reports its status, so
// --wait would never end; the plain client does not wait either.
func benchHelm(b *testing.B, n int) {
	if b.N > 1 {
		b.Fatal("run with -benchtime 1x: one run takes minutes and starts its own API server")
	}
	env := testenv.Start(b)
	work := b.TempDir()
	proxy := startProxy(b, env.Config)
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := proxy.WriteKubeconfig(kubeconfig); err != nil {
		b.Fatal(err)
	}
	createNamespace(b, env.Client, benchNamespace)
	archive, err := helmrepo.Archive(benchChart())
	if err != nil {
		b.Fatal(err)
	}
	chartPath := filepath.Join(work, chartName+"-1.0.0.tgz")
	writeFile(b, chartPath, archive)
	h := &helmRunner{bin: binary(b, "helm"), env: append(os.Environ(),
		"HOME="+work, // the kube discovery cache
		"HELM_CACHE_HOME="+filepath.Join(work, "helm-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(work, "helm-config"),
		"HELM_DATA_HOME="+filepath.Join(work, "helm-data"),
	)}

	before, apiBefore := proxy.Snapshot(), controlPlaneCPU(b)
	b.ResetTimer()
	start := time.Now()
	if err := parallel(n, func(i int) error {
		return h.run("install", fmt.Sprintf("app-%d", i), chartPath, "--namespace", benchNamespace, "--kubeconfig", kubeconfig)
	}); err != nil {
		b.Fatal(err)
	}
	toReady := time.Since(start)
	b.StopTimer()
	install, apiInstall := proxy.Snapshot().Sub(before), controlPlaneCPU(b)-apiBefore
	installCPU, peak := h.take()

	before, apiBefore = proxy.Snapshot(), controlPlaneCPU(b)
	b.StartTimer()
	start = time.Now()
	if err := parallel(n, func(i int) error {
		return h.run("uninstall", fmt.Sprintf("app-%d", i), "--namespace", benchNamespace, "--kubeconfig", kubeconfig)
	}); err != nil {
		b.Fatal(err)
	}
	toDelete := time.Since(start)
	b.StopTimer()
	uninstall, apiDelete := proxy.Snapshot().Sub(before), controlPlaneCPU(b)-apiBefore
	requireNoApps(b, env.Client)

	r := result{
		toReady: toReady, toDelete: toDelete, peakMiB: peak,
		reqPerInstall: float64(install.Total) / float64(n), writesPerInstall: float64(install.Writes) / float64(n),
		reqPerDelete: float64(uninstall.Total) / float64(n),
		apiInstall:   apiInstall / time.Duration(n), apiDelete: apiDelete / time.Duration(n),
		idleWritesPerHour: -1, load: loadavg(),
	}
	b.ReportMetric(installCPU.Seconds(), "cli-cpu-s-to-ready")
	report(b, n, "helm", r)
}

// helmRunner runs the Helm CLI and adds up the CPU time and the largest
// resident memory of its processes.
type helmRunner struct {
	bin string
	env []string

	mu     sync.Mutex
	cpu    time.Duration
	maxKiB int64
}

func (h *helmRunner) run(args ...string) error {
	cmd := exec.Command(h.bin, args...)
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("helm %v: %w\n%s", args, err, out)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		h.maxKiB = max(h.maxKiB, ru.Maxrss) // KiB on Linux
	}
	return nil
}

// take returns the CPU time and the peak memory (MiB) of one process so
// far.
func (h *helmRunner) take() (time.Duration, float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cpu, float64(h.maxKiB) / 1024
}

// benchCRDs runs the manager with ten Ready installations resyncing every
// resyncInterval, measures its resident memory, creates crds namespaced
// CRDs, and measures it again once they are all Established and the
// installations have resynced several times.
func benchCRDs(b *testing.B, crds int) {
	if b.N > 1 {
		b.Fatal("run with -benchtime 1x: one run takes minutes and starts its own API server")
	}
	const installs = 10
	ctx := b.Context()
	c, meter, _, mgr := startSystem(b)
	if err := parallel(installs, func(i int) error { return c.Create(ctx, installation(i)) }); err != nil {
		b.Fatal(err)
	}
	if err := waitInstallations(ctx, c, installs, 2*time.Minute, func(ready, _ int) bool { return ready == installs }); err != nil {
		b.Fatal(err)
	}
	rssBefore := highestRSS(b, mgr, 2*resyncInterval)

	before, kindsBefore := meter.Snapshot(), meter.Kinds()
	b.ResetTimer()
	start := time.Now()
	if err := parallel(crds, func(i int) error { return c.Create(ctx, benchCRD(i)) }); err != nil {
		b.Fatal(err)
	}
	if err := waitEstablished(ctx, c, crds, 10*time.Minute); err != nil {
		b.Fatal(err)
	}
	established := time.Since(start)
	b.StopTimer()
	rssAfter := highestRSS(b, mgr, 3*resyncInterval)
	during := meter.Snapshot().Sub(before)
	b.Logf("%d CRDs Established in %s; manager RSS %.1f MiB before, %.1f MiB after; manager requests meanwhile: %s",
		crds, established.Round(time.Millisecond), rssBefore, rssAfter, formatKinds(kindsBefore, meter.Kinds()))
	if err := waitInstallations(ctx, c, installs, time.Minute, func(ready, _ int) bool { return ready == installs }); err != nil {
		b.Fatal(err)
	}

	b.ReportMetric(rssBefore, "crd-rss-before-MiB")
	b.ReportMetric(rssAfter, "crd-rss-after-MiB")
	b.ReportMetric(rssAfter-rssBefore, "crd-rss-delta-MiB")
	b.ReportMetric(mgr.Peak(b), "peak-MiB")
	b.ReportMetric(float64(during.Total), "mgr-req")
	b.ReportMetric(established.Seconds(), "s-to-established")
	b.ReportMetric(load1(), "load1")
	crdResult.Store(&crdOutcome{crds: crds, before: rssBefore, after: rssAfter, load: loadavg()})
}

// highestRSS samples the manager's resident memory every 100 ms for d and
// returns the highest value, in MiB: memory a Go program has freed is
// returned to the kernel late, so one sample says little.
func highestRSS(b *testing.B, m *manager, d time.Duration) float64 {
	b.Helper()
	var highest float64
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		highest = max(highest, m.RSS(b))
	}
	return highest
}

// benchCRD is a namespaced CRD, Widget<i> in group bench.example.
func benchCRD(i int) *apiextensionsv1.CustomResourceDefinition {
	plural := fmt.Sprintf("widget%ds", i)
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".bench.example", Labels: map[string]string{"bench": "crd"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.example",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: plural, Singular: fmt.Sprintf("widget%d", i),
				Kind: fmt.Sprintf("Widget%d", i), ListKind: fmt.Sprintf("Widget%dList", i),
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size":  {Type: "integer"},
							"color": {Type: "string"},
						}},
					},
				}},
			}},
		},
	}
}

// waitEstablished lists the benchmark's CRDs until n are Established.
func waitEstablished(ctx context.Context, c client.Client, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var list apiextensionsv1.CustomResourceDefinitionList
		if err := c.List(ctx, &list, client.MatchingLabels{"bench": "crd"}); err != nil {
			return err
		}
		established := 0
		for _, crd := range list.Items {
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					established++
				}
			}
		}
		if established == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %d of %d CRDs Established", timeout, established, n)
		}
		time.Sleep(time.Second)
	}
}
