package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/apply/reqcount"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// gateCase is one configuration of the gate (DESIGN.md step 4) that
// BenchmarkGateOverhead installs through.
type gateCase struct {
	name string
	// hooks is how many Hooks of the same spec.order select the
	// installations, each of its own kind, answered Succeeded=True by an
	// in-process hook controller as soon as it sees the resource.
	hooks int
	// preset, when set, is the ApprovalPolicy selecting the
	// installations' namespace.
	preset v1alpha1.ApprovalPreset
	// preApproved: an Approval of the change's digest is created for
	// every installation before it is (preset Manual).
	preApproved bool
}

var gateCases = []gateCase{
	{name: "none"},
	{name: "hook", hooks: 1},
	{name: "hooks3", hooks: 3},
	{name: "approval", preset: v1alpha1.ApprovalAutomatic},
	{name: "approved", preset: v1alpha1.ApprovalManual, preApproved: true},
}

const (
	// hookGroup is the API group of the benchmark's hook kinds.
	hookGroup = "hooks.bench.annex.dev"
	// installationController is the installation controller's name in
	// the manager's metrics.
	installationController = "extensioninstallation"
	// probeNamespace holds the installation whose pending change tells
	// the approved case the digest to approve.
	probeNamespace = "gate-probe"
	// benchApprover is the user the approved case's Approvals are
	// created as: not the requester, whom the gate refuses.
	benchApprover = "gate-bench-approver"
)

// BenchmarkGateOverhead times N installations of the system benchmark's
// chart from creation to all Ready through `annex manager` (a
// subprocess, talking through a counting proxy), once per gate
// configuration, each against its own fresh API server:
//
//   - gate=none: no Hook, no ApprovalPolicy;
//   - gate=hook: one Hook whose resources a hook controller in the
//     benchmark answers Succeeded=True as soon as its informer sees them;
//   - gate=hooks3: three Hooks of the same order (fan-out), each of its
//     own kind, answered the same way;
//   - gate=approval: an ApprovalPolicy with preset Automatic selecting
//     the namespace: approval granted in advance by policy;
//   - gate=approved: an ApprovalPolicy with preset Manual, and an
//     Approval of each installation's change (its digest, read from a
//     probe installation beforehand) created before the installations.
//
// Besides the time it reports per installation the manager's API
// requests and writes, its installation reconciles (from its metrics
// endpoint), its CPU and the control plane's, and the latency from each
// installation's creation to Ready. Compare the cases side by side with
//
//	go tool benchstat -col /gate bench.raw
func BenchmarkGateOverhead(b *testing.B) {
	for _, n := range []int{100, 500} {
		b.Run(sizeName(n), func(b *testing.B) {
			for _, gc := range gateCases {
				b.Run("gate="+gc.name, func(b *testing.B) { benchGate(b, n, gc) })
			}
		})
	}
}

func benchGate(b *testing.B, n int, gc gateCase) {
	if b.N > 1 {
		b.Fatal("run with -benchtime 1x: one run takes minutes and starts its own API server")
	}
	ctx := b.Context()
	env := testenv.Start(b)
	work := b.TempDir()
	c, err := client.NewWithWatch(unlimited(env.Config), client.Options{Scheme: env.Scheme})
	must(b, err)
	proxy := startProxy(b, env.Config)
	kubeconfig := filepath.Join(work, "kubeconfig")
	must(b, proxy.WriteKubeconfig(kubeconfig))
	repo := helmrepo.NewServer(b, benchChart())
	createNamespace(b, c, benchNamespace)

	var answerer *reqcount.Counter
	if gc.hooks > 0 {
		gvrs := installHookKinds(b, c, gc.hooks)
		for i, gvr := range gvrs {
			must(b, c.Create(ctx, &v1alpha1.Hook{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-hook-%d", i)},
				Spec: v1alpha1.HookSpec{
					Resource: v1alpha1.HookResource{APIVersion: gvr.GroupVersion().String(), Kind: hookKind(i)},
					Events:   []v1alpha1.HookEvent{v1alpha1.HookPreInstall, v1alpha1.HookPreUpgrade},
					Selector: v1alpha1.HookSelector{Extensions: []string{chartName}},
					// A slow machine must not time a hook out: the answer is
					// what is measured.
					Timeout: metav1.Duration{Duration: 30 * time.Minute},
				},
			}))
		}
		answerer = answerHooks(b, env.Config, benchNamespace, gvrs)
	}
	if gc.preset != "" {
		must(b, c.Create(ctx, &v1alpha1.ApprovalPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "bench-" + strings.ToLower(string(gc.preset))},
			Spec: v1alpha1.ApprovalPolicySpec{
				Selector: v1alpha1.ApprovalSelector{Namespaces: []string{benchNamespace, probeNamespace}},
				Preset:   gc.preset,
			},
		}))
	}
	metricsAddr := freeAddress(b)
	mgr := startManager(b, work, kubeconfig, "--metrics-bind-address", metricsAddr)
	createCatalog(b, c, repo.URL())
	if gc.preApproved {
		digest := probeDigest(b, c)
		approveAll(b, env, n, digest)
	}

	// What the setup woke (each Approval wakes the installation it
	// names, not created yet) must be done before the timed window opens.
	recBefore := settle(b, metricsAddr)
	var answererBefore reqcount.Counts
	if answerer != nil {
		answererBefore = answerer.Snapshot()
	}
	before, kindsBefore := proxy.Snapshot(), proxy.Kinds()
	cpuBefore, apiBefore := mgr.CPU(b), controlPlaneCPU(b)
	timeout := 3*time.Minute + time.Duration(n)*600*time.Millisecond
	wait, err := watchReady(ctx, c, benchNamespace, n, timeout, b.Logf)
	must(b, err)
	created := make([]time.Time, n)
	b.ResetTimer()
	start := time.Now()
	if err := parallel(n, func(i int) error {
		err := c.Create(ctx, gateInstallation(i))
		created[i] = time.Now()
		return err
	}); err != nil {
		b.Fatal(err)
	}
	readyAt, err := wait()
	if err != nil {
		b.Fatalf("%v; %s", err, someWaiting(ctx, c))
	}
	toReady := time.Since(start)
	b.StopTimer()
	// The last reconciles return after their status writes made the
	// installations Ready, and may wake others: what an installation
	// costs is counted once the controller is idle again.
	rec := settle(b, metricsAddr).sub(recBefore)
	install := proxy.Snapshot().Sub(before)
	mgrCPU, apiCPU := mgr.CPU(b)-cpuBefore, controlPlaneCPU(b)-apiBefore
	b.Logf("N=%d gate=%s: %s to Ready; %s; manager requests: %s",
		n, gc.name, toReady.Round(time.Millisecond), rec, formatKinds(kindsBefore, proxy.Kinds()))

	if gc.hooks > 0 {
		requireHooksAnswered(b, c, n, gc.hooks)
	}

	latencies := make([]time.Duration, n)
	for i := range n {
		latencies[i] = readyAt[fmt.Sprintf("app-%d", i)].Sub(created[i])
	}
	slices.Sort(latencies)
	perInstall := func(v float64) float64 { return v / float64(n) }
	b.ReportMetric(toReady.Seconds(), "s-to-ready")
	b.ReportMetric(perInstall(toReady.Seconds()), "s/install")
	b.ReportMetric(latencies[n/2].Seconds(), "p50-s-latency")
	b.ReportMetric(latencies[n*95/100].Seconds(), "p95-s-latency")
	b.ReportMetric(perInstall(rec.total), "reconciles/install")
	if rec.total > 0 {
		b.ReportMetric(1000*rec.seconds/rec.total, "ms/reconcile")
	}
	b.ReportMetric(perInstall(float64(install.Total)), "req/install")
	b.ReportMetric(perInstall(float64(install.Writes)), "writes/install")
	b.ReportMetric(ms(mgrCPU)/float64(n), "mgr-cpu-ms/install")
	b.ReportMetric(ms(apiCPU)/float64(n), "api-ms/install")
	if answerer != nil {
		answered := answerer.Snapshot().Sub(answererBefore)
		b.ReportMetric(perInstall(float64(answered.Total)), "hook-req/install")
	}
	b.ReportMetric(load1(), "load1")
}

// gateInstallation is installation i of the benchmark chart, with the
// default spec.interval (10m): no resync falls into the timed window.
func gateInstallation(i int) *v1alpha1.ExtensionInstallation {
	return &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: fmt.Sprintf("app-%d", i)},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: chartName, Version: "1.x"},
	}
}

func hookKind(i int) string { return "GateCheck" + string(rune('A'+i)) }

// installHookKinds creates k CRDs of namespaced hook kinds whose spec and
// status take anything (a hook's kind must accept spec.annex), waits
// until they are served, and returns their resources.
func installHookKinds(b *testing.B, c client.Client, k int) []schema.GroupVersionResource {
	b.Helper()
	ctx := b.Context()
	anything := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	var gvrs []schema.GroupVersionResource
	for i := range k {
		kind := hookKind(i)
		plural := strings.ToLower(kind) + "s"
		must(b, c.Create(ctx, &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + hookGroup},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: hookGroup,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type:       "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": anything, "status": anything},
					}},
				}},
			},
		}))
		gvrs = append(gvrs, schema.GroupVersionResource{Group: hookGroup, Version: "v1", Resource: plural})
		waitUntil(b, time.Minute, func() error {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(schema.GroupVersionKind{Group: hookGroup, Version: "v1", Kind: kind + "List"})
			return c.List(ctx, list, client.InNamespace(benchNamespace))
		})
	}
	return gvrs
}

// answerHooks runs, until the benchmark ends, a hook controller for the
// resources gvrs in ns that agrees to every change at once: an informer
// per kind (one list, then a watch; nothing polls) queues each resource
// without conditions, and 4 workers patch its status to Succeeded=True.
// It returns the counter of the controller's own API requests.
func answerHooks(b *testing.B, cfg *rest.Config, ns string, gvrs []schema.GroupVersionResource) *reqcount.Counter {
	b.Helper()
	counter := &reqcount.Counter{}
	dyn, err := dynamic.NewForConfig(counter.Wrap(unlimited(cfg)))
	must(b, err)
	type key struct {
		gvr       int
		namespace string
		name      string
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[key]())
	ctx, cancel := context.WithCancel(context.Background())
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	for i, gvr := range gvrs {
		enqueue := func(obj any) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return
			}
			if conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); len(conds) > 0 {
				return // answered
			}
			queue.Add(key{gvr: i, namespace: u.GetNamespace(), name: u.GetName()})
		}
		_, err := factory.ForResource(gvr).Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    enqueue,
			UpdateFunc: func(_, obj any) { enqueue(obj) },
		})
		must(b, err)
	}
	factory.Start(ctx.Done())
	for gvr, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			cancel()
			b.Fatalf("hook controller: the informer of %s did not sync", gvr)
		}
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				k, shutdown := queue.Get()
				if shutdown {
					return
				}
				patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":"Answered","message":"the benchmark's hook agrees at once","lastTransitionTime":%q}]}}`,
					v1alpha1.ConditionSucceeded, time.Now().UTC().Format(time.RFC3339))
				_, err := dyn.Resource(gvrs[k.gvr]).Namespace(k.namespace).Patch(ctx, k.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
				switch {
				case err == nil || apierrors.IsNotFound(err) || ctx.Err() != nil:
					queue.Forget(k)
				default:
					queue.AddRateLimited(k)
				}
				queue.Done(k)
			}
		})
	}
	b.Cleanup(func() {
		cancel()
		queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
	})
	return counter
}

// requireHooksAnswered fails unless every installation's HookRequest
// recorded the answers of all hooks hooks: the gate really asked them.
func requireHooksAnswered(b *testing.B, c client.Client, n, hooks int) {
	b.Helper()
	var list v1alpha1.HookRequestList
	must(b, c.List(b.Context(), &list, client.InNamespace(benchNamespace)))
	succeeded := 0
	for _, req := range list.Items {
		answered := 0
		for _, h := range req.Status.Hooks {
			if h.State == v1alpha1.HookSucceeded {
				answered++
			}
		}
		if answered == hooks && meta.IsStatusConditionTrue(req.Status.Conditions, v1alpha1.ConditionSucceeded) {
			succeeded++
		}
	}
	if succeeded != n {
		b.Fatalf("%d HookRequests in %s, %d of them Succeeded with %d hooks' answers; want %d", len(list.Items), benchNamespace, succeeded, hooks, n)
	}
}

// probeDigest installs the chart once in probeNamespace, which a Manual
// ApprovalPolicy selects, reads the digest of the change waiting for
// approval, and deletes the probe. The digest covers the event, the
// versions, the artifact, the values and the cluster's Kubernetes
// version, not the installation's name or namespace: the benchmark's
// installations make the same change.
func probeDigest(b *testing.B, c client.Client) string {
	b.Helper()
	ctx := b.Context()
	createNamespace(b, c, probeNamespace)
	probe := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: probeNamespace, Name: "probe"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: chartName, Version: "1.x"},
	}
	must(b, c.Create(ctx, probe))
	var change *v1alpha1.PendingChange
	waitUntil(b, 2*time.Minute, func() error {
		got := &v1alpha1.ExtensionInstallation{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(probe), got); err != nil {
			return err
		}
		change = got.Status.Change
		if change == nil || change.Approval == nil || change.Approval.State != v1alpha1.ApprovalPending {
			return fmt.Errorf("the probe's change does not wait for approval: %+v", change)
		}
		return nil
	})
	if change.Approval.RequestedBy == "" {
		b.Fatal("the probe records no requester: the admission policies of config/admission are not at work, and every Approval would be refused")
	}
	must(b, c.Delete(ctx, probe))
	waitUntil(b, 2*time.Minute, func() error {
		err := c.Get(ctx, client.ObjectKeyFromObject(probe), &v1alpha1.ExtensionInstallation{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the probe is not gone yet (%v)", err)
	})
	return change.Digest
}

// approveAll creates, as benchApprover, an Approval of digest for each
// of the n installations, before they exist.
func approveAll(b *testing.B, env *testenv.Env, n int, digest string) {
	b.Helper()
	cfg := unlimited(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: benchApprover, Groups: []string{"system:masters"}}
	approver, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	must(b, err)
	must(b, parallel(n, func(i int) error {
		name := fmt.Sprintf("app-%d", i)
		return approver.Create(b.Context(), &v1alpha1.Approval{
			ObjectMeta: metav1.ObjectMeta{Namespace: benchNamespace, Name: name},
			Spec:       v1alpha1.ApprovalSpec{Installation: name, Digest: digest, Approver: benchApprover},
		})
	}))
}

// watchReady opens a watch of the installations in ns and returns wait,
// which follows it until n of them are Ready for their generation and
// returns when each was first seen Ready. It re-lists only when the watch
// ends, logs progress every 30 s with logf, and fails after timeout.
// (Progress goes to the benchmark's log, not to stderr: go test prints a
// benchmark's name before it runs and its numbers after, and a line
// written in between would split the result line benchstat reads.)
func watchReady(ctx context.Context, c client.WithWatch, ns string, n int, timeout time.Duration, logf func(format string, args ...any)) (wait func() (map[string]time.Time, error), err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	ready := map[string]time.Time{}
	note := func(inst *v1alpha1.ExtensionInstallation) {
		if _, seen := ready[inst.Name]; !seen && readyNow(inst) {
			ready[inst.Name] = time.Now()
		}
	}
	open := func() (watch.Interface, error) {
		var list v1alpha1.ExtensionInstallationList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for i := range list.Items {
			note(&list.Items[i])
		}
		return c.Watch(ctx, &v1alpha1.ExtensionInstallationList{}, client.InNamespace(ns),
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	}
	w, err := open()
	if err != nil {
		cancel()
		return nil, err
	}
	start := time.Now()
	return func() (map[string]time.Time, error) {
		defer cancel()
		lastLog := start
		for {
			for ev := range w.ResultChan() {
				inst, ok := ev.Object.(*v1alpha1.ExtensionInstallation)
				if !ok {
					break // an error event: list again
				}
				if ev.Type != watch.Deleted {
					note(inst)
				}
				if len(ready) >= n {
					w.Stop()
					return ready, nil
				}
				if time.Since(lastLog) > 30*time.Second {
					logf("%s: %d of %d installations Ready (load %s)", time.Since(start).Round(time.Second), len(ready), n, loadavg())
					lastLog = time.Now()
				}
			}
			w.Stop()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("after %s: %d of %d installations Ready", timeout, len(ready), n)
			}
			if w, err = open(); err != nil {
				return nil, fmt.Errorf("after %s: %d of %d installations Ready; %w", time.Since(start).Round(time.Second), len(ready), n, err)
			}
		}
	}, nil
}

// someWaiting describes an installation in benchNamespace that is not
// Ready, for the failure message of a wait that ran out.
func someWaiting(ctx context.Context, c client.Client) string {
	var list v1alpha1.ExtensionInstallationList
	if err := c.List(context.WithoutCancel(ctx), &list, client.InNamespace(benchNamespace)); err != nil {
		return err.Error()
	}
	for _, inst := range list.Items {
		if !readyNow(&inst) {
			return fmt.Sprintf("e.g. %s: conditions %+v, change %+v", inst.Name, inst.Status.Conditions, inst.Status.Change)
		}
	}
	return "all listed installations are Ready"
}

// freeAddress returns a loopback address with a port free now, for the
// manager's metrics endpoint.
func freeAddress(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	addr := l.Addr().String()
	must(b, l.Close())
	return addr
}

// settle waits until the installation controller has not reconciled for
// a second, and returns its reconciles so far.
func settle(b *testing.B, metricsAddr string) reconcileStats {
	b.Helper()
	var last reconcileStats
	stable := 0
	waitUntil(b, time.Minute, func() error {
		now, err := scrapeReconciles(metricsAddr)
		if err != nil {
			return err
		}
		if now.total == last.total {
			stable++
		} else {
			stable = 0
		}
		last = now
		if stable < 5 { // 5 scrapes 200 ms apart
			return fmt.Errorf("the installation controller reconciled %.0f times so far and has not been idle for a second yet", now.total)
		}
		return nil
	})
	return last
}

// reconcileStats are the installation controller's reconciles so far:
// how many, by result, and the seconds they took together.
type reconcileStats struct {
	total    float64
	byResult map[string]float64
	seconds  float64
}

func (s reconcileStats) sub(earlier reconcileStats) reconcileStats {
	out := reconcileStats{total: s.total - earlier.total, seconds: s.seconds - earlier.seconds, byResult: map[string]float64{}}
	for r, v := range s.byResult {
		if d := v - earlier.byResult[r]; d != 0 {
			out.byResult[r] = d
		}
	}
	return out
}

func (s reconcileStats) String() string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(s.byResult)) {
		parts = append(parts, fmt.Sprintf("%s %.0f", r, s.byResult[r]))
	}
	mean := 0.0
	if s.total > 0 {
		mean = 1000 * s.seconds / s.total
	}
	return fmt.Sprintf("%.0f installation reconciles (%s), %.1f ms each on average", s.total, strings.Join(parts, ", "), mean)
}

// scrapeReconciles reads the installation controller's reconciles from
// the manager's metrics endpoint at addr.
func scrapeReconciles(addr string) (reconcileStats, error) {
	var out reconcileStats
	err := scrapeMetrics(addr, func(body io.Reader) (err error) {
		out, err = parseReconciles(body, installationController)
		return err
	})
	return out, err
}

// scrapeMetrics GETs http://addr/metrics and hands read its body.
func scrapeMetrics(addr string, read func(io.Reader) error) error {
	hc := http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET http://%s/metrics: %s", addr, resp.Status)
	}
	return read(resp.Body)
}

// eachSample calls fn with the name, labels and value of every sample
// with labels in r, metrics in the Prometheus text format.
func eachSample(r io.Reader, fn func(name string, labels map[string]string, v float64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		labelText, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		labels := map[string]string{}
		for l := range strings.SplitSeq(labelText, ",") {
			k, v, _ := strings.Cut(l, "=")
			labels[k] = strings.Trim(v, `"`)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return fmt.Errorf("%q: %w", line, err)
		}
		fn(name, labels, v)
	}
	return sc.Err()
}

// parseReconciles reads controller_runtime_reconcile_total and
// controller_runtime_reconcile_time_seconds_sum of controller from
// metrics in the Prometheus text format.
func parseReconciles(r io.Reader, controller string) (reconcileStats, error) {
	out := reconcileStats{byResult: map[string]float64{}}
	err := eachSample(r, func(name string, labels map[string]string, v float64) {
		switch {
		case labels["controller"] != controller:
		case name == "controller_runtime_reconcile_total":
			out.byResult[labels["result"]] += v
			out.total += v
		case name == "controller_runtime_reconcile_time_seconds_sum":
			out.seconds += v
		}
	})
	return out, err
}

func TestParseReconciles(t *testing.T) {
	metrics := `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="catalog",result="success"} 7
controller_runtime_reconcile_total{controller="extensioninstallation",result="error"} 2
controller_runtime_reconcile_total{controller="extensioninstallation",result="requeue"} 0
controller_runtime_reconcile_total{controller="extensioninstallation",result="success"} 301
controller_runtime_reconcile_time_seconds_bucket{controller="extensioninstallation",le="0.005"} 12
controller_runtime_reconcile_time_seconds_sum{controller="extensioninstallation"} 15.5
controller_runtime_reconcile_time_seconds_count{controller="extensioninstallation"} 303
controller_runtime_reconcile_time_seconds_sum{controller="catalog"} 99
`
	got, err := parseReconciles(strings.NewReader(metrics), installationController)
	if err != nil {
		t.Fatal(err)
	}
	if got.total != 303 || got.seconds != 15.5 || got.byResult["success"] != 301 || got.byResult["error"] != 2 {
		t.Errorf("got %+v; want 303 reconciles (301 success, 2 error) taking 15.5 s", got)
	}
	if d := got.sub(reconcileStats{total: 3, seconds: 0.5, byResult: map[string]float64{"success": 3}}); d.total != 300 || d.byResult["success"] != 298 || d.seconds != 15 {
		t.Errorf("difference: got %+v", d)
	}
}
