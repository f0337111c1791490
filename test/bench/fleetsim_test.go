package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// The fleet simulation's size comes from these environment variables
// (make bench-fleet sets them from CLUSTERS, EXTENSIONS and MEMBERS);
// without them it runs small, so that make bench keeps it working.
const (
	fleetClustersEnv   = "ANNEX_FLEET_CLUSTERS"
	fleetExtensionsEnv = "ANNEX_FLEET_EXTENSIONS"
	fleetMembersEnv    = "ANNEX_FLEET_MEMBERS"
	fleetShardsEnv     = "ANNEX_FLEET_SHARDS"
	// fleetPhasesEnv set to 5 stops the simulation after phase 5 (the
	// member outage), before the staged rollouts of phases 6–8, which at
	// 1,000 clusters take about as long again; set to 1, after phase 1
	// (every installation Ready, the hub's bytes measured).
	fleetPhasesEnv = "ANNEX_FLEET_PHASES"
)

// fleetSize is one size of the simulation: clusters over members, each
// given extensions, served by shards managers (1: one unsharded manager);
// large makes extension 0 the large chart (fleetLargeChart).
type fleetSize struct {
	clusters, extensions, members, shards int
	large                                 bool
}

func (s fleetSize) String() string {
	name := fmt.Sprintf("C%d-E%d-M%d", s.clusters, s.extensions, s.members)
	if s.shards > 1 {
		name += fmt.Sprintf("-S%d", s.shards)
	}
	if s.large {
		name += "-L"
	}
	return name
}

// shardOf is the shard of cluster i: the default one (no label) for the
// first of every shards clusters, s1, s2, … for the others.
func (s fleetSize) shardOf(i int) string {
	if k := i % s.shards; k > 0 {
		return fmt.Sprintf("s%d", k)
	}
	return ""
}

// fleetSizeFromEnv returns the size the environment asks for, or 20
// clusters × 2 extensions over 2 member API servers.
func fleetSizeFromEnv(b *testing.B) fleetSize {
	s := fleetSize{clusters: 20, extensions: 2, members: 2, shards: 1}
	for env, field := range map[string]*int{fleetClustersEnv: &s.clusters, fleetExtensionsEnv: &s.extensions, fleetMembersEnv: &s.members, fleetShardsEnv: &s.shards} {
		v := os.Getenv(env)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a positive number", env, v)
		}
		*field = n
	}
	s.large = fleetLarge(b)
	if s.extensions < 3 {
		// The phases change extensions 0 (version), 1 (values) and 2
		// (values during the outage); with fewer, they share.
		b.Logf("%d extensions: the phases change the same extensions", s.extensions)
	}
	return s
}

// BenchmarkFleetScale is the fleet simulation (make bench-fleet): a real
// hub (etcd, kube-apiserver, `annex manager` as a subprocess talking to
// it through a counting proxy) and a few real member API servers that
// many ManagedClusters share through their kubeconfig Secrets. One
// profile of E extensions goes to every cluster, then one extension's
// version is bumped, another's values change, the manager is killed
// (SIGKILL) and started again, and one member API server stops
// answering (its address refuses connections) and comes back. Last come
// staged rollouts (fleetRollouts): a version bump in steps of 1 %, 10 %
// and the rest, the same with maxConcurrent 50, and a version that never
// becomes healthy, halted in the 10 % step and rolled back. See "Fleet
// simulation" in docs/benchmarks.md for what it measures faithfully.
func BenchmarkFleetScale(b *testing.B) {
	size := fleetSizeFromEnv(b)
	b.Run(size.String(), func(b *testing.B) {
		for range b.N {
			benchFleetScale(b, size)
		}
	})
}

const (
	fleetNamespace = "fleet"
	fleetProfile   = "fleet"
)

// fleetExtension is the name of the simulation's extension i.
func fleetExtension(i int) string { return fmt.Sprintf("fleet-%d", i) }

// fleetChart is benchChart (four objects named after the release) with a
// ConfigMap holding .Values.note, so that a values change changes what
// is applied.
func fleetChart(name, version string) helmrepo.Chart {
	c := benchChart()
	c.Name, c.Version = name, version
	c.Files["templates/configmap.yaml"] = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  labels: {app: {{ .Release.Name }}}
data:
  note: {{ .Values.note | default "none" | quote }}
`
	return c
}

func benchFleetScale(b *testing.B, size fleetSize) {
	ctx := context.Background()
	work := b.TempDir()
	installations := size.clusters * size.extensions

	// The hub, its Helm repository and Catalog.
	hub := testenv.Start(b)
	c, err := client.New(unlimited(hub.Config), client.Options{Scheme: hub.Scheme})
	must(b, err)
	// Extension 0 is the large chart when size.large; the others are
	// small.
	first := fleetChart
	if size.large {
		first = fleetLargeChart
		b.Logf("%s is the large chart (%s=1): %d KiB of chart files", fleetExtension(0), fleetLargeEnv, chartBytes(first(fleetExtension(0), "1.0.0"))>>10)
	}
	var charts []helmrepo.Chart
	charts = append(charts, first(fleetExtension(0), "1.0.0"))
	for i := 1; i < size.extensions; i++ {
		charts = append(charts, fleetChart(fleetExtension(i), "1.0.0"))
	}
	charts = append(charts, first(fleetExtension(0), "1.1.0"))
	charts = append(charts, fleetRolloutCharts(fleetExtension(0), first)...)
	repo := helmrepo.NewServer(b, charts...)
	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}))
	must(b, c.Create(ctx, &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}}))

	// The member API servers, each behind a gate that can refuse
	// connections, and the ManagedClusters, dealt round-robin.
	gates := make([]*tcpGate, size.members)
	for i := range gates {
		member := testenv.Start(b)
		must(b, member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}))
		gates[i] = startGate(b, member.Config.Host)
		path := filepath.Join(work, fmt.Sprintf("member-%d.kubeconfig", i))
		must(b, member.WriteKubeconfig(path))
		data := gates[i].kubeconfig(b, path)
		must(b, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fleetNamespace, Name: memberSecret(i)},
			Data: map[string][]byte{"kubeconfig": data}}))
	}
	memberOf := map[string]int{} // cluster → member
	for i := range size.clusters {
		name := fmt.Sprintf("cluster-%04d", i)
		memberOf[name] = i % size.members
		labels := map[string]string{"fleet": "sim"}
		if shard := size.shardOf(i); shard != "" {
			labels[v1alpha1.LabelShard] = shard
		}
		must(b, c.Create(ctx, &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{
				Namespace: fleetNamespace, Name: memberSecret(i % size.members), Key: "kubeconfig"}}}))
	}

	// The manager, through a counting proxy.
	proxy := startProxy(b, hub.Config)
	kubeconfig := filepath.Join(work, "kubeconfig")
	must(b, proxy.WriteKubeconfig(kubeconfig))
	cacheDir := filepath.Join(work, "cache")
	for _, dir := range []string{"first", "restarted"} {
		must(b, os.MkdirAll(filepath.Join(work, dir), 0o755))
	}
	mgr := startShards(b, size, filepath.Join(work, "first"), kubeconfig, cacheDir, false)
	registered := time.Now()
	waitUntil(b, 2*time.Minute+time.Duration(size.clusters)*200*time.Millisecond, func() error {
		var exts v1alpha1.ExtensionList
		if err := c.List(ctx, &exts); err != nil || len(exts.Items) < size.extensions {
			return fmt.Errorf("%d Extensions (err=%v)", len(exts.Items), err)
		}
		return allReachable(c, size.clusters)
	})
	b.Logf("%d clusters over %d member API servers Reachable %.1f s after the manager started; manager RSS %.1f MiB",
		size.clusters, size.members, time.Since(registered).Seconds(), mgr.RSS(b))
	b.ReportMetric(mgr.RSS(b), "registered-MiB")

	track := trackInstallations(b, hub)
	ro := trackRollout(b, hub)
	phaseTimeout := 5*time.Minute + time.Duration(installations)*100*time.Millisecond
	if size.large {
		// Each cluster's large installation creates 8 CRDs on a member
		// API server that many clusters share: 200 took 229 s.
		phaseTimeout += time.Duration(size.clusters) * time.Second
	}

	// 1. One profile of E extensions to every cluster.
	profile := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: fleetProfile}, Spec: v1alpha1.ExtensionProfileSpec{
		Namespace:       fleetNamespace,
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "sim"}},
	}}
	for i := range size.extensions {
		profile.Spec.Extensions = append(profile.Spec.Extensions, v1alpha1.ProfileExtension{
			Name: fleetExtension(i), Version: "1.0.0", Mode: v1alpha1.ProfileModeEnforced})
	}
	before, kindsBefore := proxy.Snapshot(), proxy.Kinds()
	start := time.Now()
	track.phase(func(in *v1alpha1.ExtensionInstallation) bool { return ready(in) })
	must(b, c.Create(ctx, profile))
	perCluster := track.wait(b, installations, phaseTimeout)
	rollout := time.Since(start)
	served := proxy.Snapshot().Sub(before)
	p50, p90 := percentile(perCluster, start, 50), percentile(perCluster, start, 90)
	b.ReportMetric(rollout.Seconds(), "s-ready")
	b.ReportMetric(p50.Seconds(), "s-cluster-p50")
	b.ReportMetric(p90.Seconds(), "s-cluster-p90")
	b.ReportMetric(float64(served.Total)/float64(installations), "hub-req/inst")
	b.ReportMetric(float64(served.Writes)/float64(installations), "hub-writes/inst")
	b.Logf("1. profile: %d installations Ready in %.1f s (per cluster p50 %.1f s, p90 %.1f s); the manager sent the hub %d requests (%d writes): %s; loadavg %s",
		installations, rollout.Seconds(), p50.Seconds(), p90.Seconds(), served.Total, served.Writes, formatKinds(kindsBefore, proxy.Kinds()), loadavg())

	bytes, kinds := hubBytes(b, c)
	b.ReportMetric(float64(bytes)/float64(installations), "hub-B/inst")
	b.Logf("   hub objects in namespace %s: %s (JSON bytes as listed, managedFields included)", fleetNamespace, kinds)
	if size.large {
		large, largeKinds := hubBytesOf(b, c, func(ext string) bool { return ext == fleetExtension(0) })
		b.ReportMetric(float64(large)/float64(size.clusters), "hub-B/large-inst")
		b.Logf("   of which the large chart's %d installations: %s (%.1f KiB per installation)", size.clusters, largeKinds, float64(large)/1024/float64(size.clusters))
	}
	if db, err := etcdSize(hub); err != nil {
		b.Logf("   hub etcd size: %v", err)
	} else {
		b.ReportMetric(db/(1<<20), "etcd-MiB")
		b.Logf("   hub etcd database: %.1f MiB (apiserver_storage_size_bytes: the file, history not yet compacted included)", db/(1<<20))
	}
	if os.Getenv(fleetPhasesEnv) == "1" {
		b.ReportMetric(mgr.Peak(b), "peak-MiB")
		b.ReportMetric(mgr.CPU(b).Seconds(), "cpu-s")
		b.ReportMetric(float64(installations), "installations")
		b.Logf("%s=1: phases 2–8 not run; manager: peak RSS %.1f MiB, %.1f CPU seconds%s; loadavg %s",
			fleetPhasesEnv, mgr.Peak(b), mgr.CPU(b).Seconds(), mgr.Describe(b), loadavg())
		return
	}

	// 2. A version bump of one extension.
	bumped := fleetExtension(0)
	start = time.Now()
	track.phase(func(in *v1alpha1.ExtensionInstallation) bool {
		return in.Spec.Extension == bumped && in.Status.InstalledVersion == "1.1.0" && ready(in)
	})
	before, kindsBefore = proxy.Snapshot(), proxy.Kinds()
	editProfile(b, c, func(p *v1alpha1.ExtensionProfile) { p.Spec.Extensions[0].Version = "1.1.0" })
	track.wait(b, size.clusters, phaseTimeout)
	served = proxy.Snapshot().Sub(before)
	b.ReportMetric(time.Since(start).Seconds(), "s-version-bump")
	b.ReportMetric(float64(served.Total)/float64(size.clusters), "bump-hub-req/upgrade")
	b.Logf("2. version bump of %s on %d clusters done in %.1f s; the manager sent the hub %d requests: %s; loadavg %s",
		bumped, size.clusters, time.Since(start).Seconds(), served.Total, formatKinds(kindsBefore, proxy.Kinds()), loadavg())

	// 3. A values change of one extension.
	changed := fleetExtension(1 % size.extensions)
	start = time.Now()
	track.phase(noteIs(changed, "changed"))
	before = proxy.Snapshot()
	editProfile(b, c, func(p *v1alpha1.ExtensionProfile) { setNote(&p.Spec.Extensions[1%size.extensions], "changed") })
	track.wait(b, size.clusters, phaseTimeout)
	valuesChange := time.Since(start)
	served = proxy.Snapshot().Sub(before)
	b.ReportMetric(valuesChange.Seconds(), "s-values-change")
	b.Logf("3. values change of %s on %d clusters done in %.1f s; the manager sent the hub %d requests (%d writes); loadavg %s",
		changed, size.clusters, valuesChange.Seconds(), served.Total, served.Writes, loadavg())

	// 4. The manager killed and started again: how long until it has
	// reconciled every installation and gone quiet, and what it wrote.
	// It is killed once the profile's rollout of phase 3 is Complete (its
	// last clusters' revision records written too): what the restart
	// writes is then what a restart of a quiet hub writes.
	newest := newestRevision(b, c)
	ro.wait(b, phaseTimeout, func(st v1alpha1.RolloutStatus) bool {
		return st.Phase == v1alpha1.RolloutComplete && st.Revision == newest
	})
	// The Events of that completion are posted just after the status that
	// says it: wait until the manager has written nothing for a while, so
	// that they are not counted as the restart's.
	waitNoWrites(b, proxy, 2*time.Second, time.Minute)
	peak, cpu := mgr.Peak(b), mgr.CPU(b)
	before = proxy.Snapshot()
	kindsBefore = proxy.Kinds()
	statusBefore := profileStatus(b, c)
	mgr.Kill(b)
	start = time.Now()
	mgr = startShards(b, size, filepath.Join(work, "restarted"), kubeconfig, cacheDir, true)
	steady := waitSteady(b, mgr.metrics, installations, phaseTimeout)
	restartWrites := proxy.Snapshot().Sub(before)
	b.ReportMetric(steady.Sub(start).Seconds(), "s-restart-steady")
	b.ReportMetric(float64(restartWrites.Writes), "restart-writes")
	b.Logf("4. restart: steady %.1f s after the start (every installation reconciled, then %s without a reconcile); %d requests, %d writes: %s; "+
		"events: %s; the profile's status changed in: %s",
		steady.Sub(start).Seconds(), steadyQuiet, restartWrites.Total, restartWrites.Writes, formatWrites(kindsBefore, proxy.Kinds()),
		eventsSince(b, c, start), changedFields(statusBefore, profileStatus(b, c)))
	if n := track.count(ready); n != installations {
		b.Errorf("after the restart %d of %d installations are Ready", n, installations)
	}

	// 5. One member API server stops answering: the healthy clusters'
	// installations of a values change, against phase 3's pace.
	down := 0
	healthy := 0
	for _, m := range memberOf {
		if m != down {
			healthy++
		}
	}
	outage := fleetExtension(2 % size.extensions)
	gates[down].Down()
	start = time.Now()
	track.phase(noteIs(outage, "outage"))
	editProfile(b, c, func(p *v1alpha1.ExtensionProfile) { setNote(&p.Spec.Extensions[2%size.extensions], "outage") })
	track.waitFor(b, healthy, phaseTimeout, func(in *v1alpha1.ExtensionInstallation) bool { return memberOf[in.Spec.Cluster] != down })
	healthyDone := time.Since(start)
	gates[down].Up(b)
	track.wait(b, size.clusters, phaseTimeout)
	recovered := time.Since(start)
	slowdown := healthyDone.Seconds() / (valuesChange.Seconds() * float64(healthy) / float64(size.clusters))
	b.ReportMetric(healthyDone.Seconds(), "s-outage-healthy")
	b.ReportMetric(slowdown, "outage-slowdown")
	b.ReportMetric(recovered.Seconds(), "s-outage-recovered")
	b.Logf("5. member 0 down: %d healthy clusters done in %.1f s (%.2f× phase 3's pace per cluster); all %d done %.1f s after the change, once it was back",
		healthy, healthyDone.Seconds(), slowdown, size.clusters, recovered.Seconds())

	peak = max(peak, mgr.Peak(b))
	cpu += mgr.CPU(b)
	b.ReportMetric(peak, "peak-MiB")
	b.ReportMetric(cpu.Seconds(), "cpu-s")
	b.ReportMetric(float64(installations), "installations")
	b.Logf("manager: peak RSS %.1f MiB, %.1f CPU seconds over both runs (phases 1–5)%s; loadavg %s", peak, cpu.Seconds(), mgr.Describe(b), loadavg())

	// 6–8. Staged rollouts of extension 0 (fleetrollout_test.go).
	if os.Getenv(fleetPhasesEnv) == "5" {
		b.Logf("%s=5: phases 6–8 (staged rollouts) not run", fleetPhasesEnv)
		return
	}
	fleetRollouts(b, c, track, ro, size, phaseTimeout)
}

// profileStatus is the simulation's profile's status as JSON fields.
func profileStatus(b *testing.B, c client.Client) map[string]any {
	b.Helper()
	p := &v1alpha1.ExtensionProfile{}
	must(b, c.Get(context.Background(), client.ObjectKey{Name: fleetProfile}, p))
	data, err := json.Marshal(p.Status)
	must(b, err)
	out := map[string]any{}
	must(b, json.Unmarshal(data, &out))
	return out
}

// changedFields names the top-level fields (and status.rollout's) that
// differ between two statuses, or "nothing".
func changedFields(before, after map[string]any) string {
	var changed []string
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	for k := range keys {
		if k == "rollout" {
			rb, _ := before[k].(map[string]any)
			ra, _ := after[k].(map[string]any)
			if detail := changedFields(rb, ra); detail != "nothing" {
				changed = append(changed, "rollout."+detail)
			}
			continue
		}
		x, _ := json.Marshal(before[k])
		y, _ := json.Marshal(after[k])
		if string(x) != string(y) {
			changed = append(changed, fmt.Sprintf("%s (%s → %s)", k, truncate(string(x), 300), truncate(string(y), 300)))
		}
	}
	if len(changed) == 0 {
		return "nothing"
	}
	slices.Sort(changed)
	return strings.Join(changed, ", ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// eventsSince counts the Events recorded since start by reason and the
// kind of object they regard, or "none".
// waitNoWrites waits until p has seen no write for quiet, at most
// timeout (then it fails).
func waitNoWrites(b *testing.B, p *countingProxy, quiet, timeout time.Duration) {
	b.Helper()
	last, since := p.Snapshot().Writes, time.Now()
	for deadline := time.Now().Add(timeout); time.Since(since) < quiet; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("the manager kept writing for %s", timeout)
		}
		if now := p.Snapshot().Writes; now != last {
			last, since = now, time.Now()
		}
	}
}

func eventsSince(b *testing.B, c client.Client, start time.Time) string {
	b.Helper()
	var list eventsv1.EventList
	must(b, c.List(context.Background(), &list))
	counts := map[string]int{}
	for _, e := range list.Items {
		if e.CreationTimestamp.Time.Before(start.Truncate(time.Second)) {
			continue
		}
		counts[e.Reason+" on "+e.Regarding.Kind+" "+e.Regarding.Name]++
	}
	if len(counts) == 0 {
		return "none"
	}
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, n))
	}
	slices.Sort(parts)
	return truncate(strings.Join(parts, "; "), 600)
}

// newestRevision is the number of the simulation's profile's newest
// revision (its ControllerRevisions).
func newestRevision(b *testing.B, c client.Client) int64 {
	b.Helper()
	var list appsv1.ControllerRevisionList
	must(b, c.List(context.Background(), &list, client.InNamespace(fleetNamespace), client.MatchingLabels{v1alpha1.LabelProfile: fleetProfile}))
	newest := int64(0)
	for _, cr := range list.Items {
		newest = max(newest, cr.Revision)
	}
	return newest
}

func memberSecret(i int) string { return fmt.Sprintf("member-%d", i) }

// ready reports whether in is Ready for its current generation.
func ready(in *v1alpha1.ExtensionInstallation) bool {
	c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == in.Generation
}

// noteIs is done for ext's installations Ready with values {note: note}.
func noteIs(ext, note string) func(*v1alpha1.ExtensionInstallation) bool {
	want := `{"note":"` + note + `"}`
	return func(in *v1alpha1.ExtensionInstallation) bool {
		return in.Spec.Extension == ext && in.Spec.Values != nil && string(in.Spec.Values.Raw) == want && ready(in)
	}
}

func setNote(ext *v1alpha1.ProfileExtension, note string) {
	ext.Values = &apiextensionsv1.JSON{Raw: []byte(`{"note":"` + note + `"}`)}
}

// editProfile changes the simulation's profile, retrying on conflicts.
func editProfile(b *testing.B, c client.Client, edit func(*v1alpha1.ExtensionProfile)) {
	b.Helper()
	waitUntil(b, time.Minute, func() error {
		p := &v1alpha1.ExtensionProfile{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: fleetProfile}, p); err != nil {
			return err
		}
		edit(p)
		return c.Update(context.Background(), p)
	})
}

// installationTracker watches the hub's installations and, for the
// current phase, when each first met the phase's condition.
type installationTracker struct {
	mu   sync.Mutex
	all  map[string]*v1alpha1.ExtensionInstallation
	done map[string]time.Time // installation → when it met cond
	cond func(*v1alpha1.ExtensionInstallation) bool
}

// trackInstallations starts an informer on the hub's installations (one
// list and one watch: the benchmark does not poll the hub).
func trackInstallations(b *testing.B, hub *testenv.Env) *installationTracker {
	b.Helper()
	ca, err := cache.New(unlimited(hub.Config), cache.Options{Scheme: hub.Scheme,
		DefaultNamespaces: map[string]cache.Config{fleetNamespace: {}}})
	must(b, err)
	t := &installationTracker{all: map[string]*v1alpha1.ExtensionInstallation{}, done: map[string]time.Time{}}
	inf, err := ca.GetInformer(context.Background(), &v1alpha1.ExtensionInstallation{})
	must(b, err)
	see := func(obj any) {
		in, ok := obj.(*v1alpha1.ExtensionInstallation)
		if !ok {
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.all[in.Name] = in
		if _, seen := t.done[in.Name]; !seen && t.cond != nil && t.cond(in) {
			t.done[in.Name] = time.Now()
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
		DeleteFunc: func(obj any) {
			if in, ok := obj.(*v1alpha1.ExtensionInstallation); ok {
				t.mu.Lock()
				delete(t.all, in.Name)
				t.mu.Unlock()
			}
		},
	})
	must(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = ca.Start(ctx) }()
	b.Cleanup(cancel)
	if !ca.WaitForCacheSync(ctx) {
		b.Fatal("the installations' informer did not sync")
	}
	return t
}

// phase starts counting the installations that meet cond, from now;
// those that meet it already count at once.
func (t *installationTracker) phase(cond func(*v1alpha1.ExtensionInstallation) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cond, t.done = cond, map[string]time.Time{}
	now := time.Now()
	for name, in := range t.all {
		if cond(in) {
			t.done[name] = now
		}
	}
}

// wait waits until n installations met the phase's condition, and
// returns when the last installation of each cluster did.
func (t *installationTracker) wait(b *testing.B, n int, timeout time.Duration) map[string]time.Time {
	b.Helper()
	return t.waitFor(b, n, timeout, func(*v1alpha1.ExtensionInstallation) bool { return true })
}

// waitFor is wait counting only the installations of which is true.
func (t *installationTracker) waitFor(b *testing.B, n int, timeout time.Duration, which func(*v1alpha1.ExtensionInstallation) bool) map[string]time.Time {
	b.Helper()
	var perCluster map[string]time.Time
	testenv.Eventually(b, timeout, func() error {
		t.mu.Lock()
		defer t.mu.Unlock()
		perCluster = map[string]time.Time{}
		got := 0
		for name, at := range t.done {
			in := t.all[name]
			if in == nil || !which(in) {
				continue
			}
			got++
			if at.After(perCluster[in.Spec.Cluster]) {
				perCluster[in.Spec.Cluster] = at
			}
		}
		if got < n {
			return fmt.Errorf("%d of %d installations done", got, n)
		}
		return nil
	})
	return perCluster
}

// count returns how many installations meet cond now.
func (t *installationTracker) count(cond func(*v1alpha1.ExtensionInstallation) bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, in := range t.all {
		if cond(in) {
			n++
		}
	}
	return n
}

// percentile returns the p-th percentile of the times since start.
func percentile(at map[string]time.Time, start time.Time, p int) time.Duration {
	var d []time.Duration
	for _, t := range at {
		d = append(d, t.Sub(start))
	}
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, (len(d)*p+99)/100-1)]
}

// steadyQuiet is how long the restarted manager must go without a
// reconcile to count as steady.
const steadyQuiet = 5 * time.Second

// waitSteady waits until the managers whose metrics are at addrs have
// reconciled at least n installations in all and then none for
// steadyQuiet, and returns when they reconciled the last.
func waitSteady(b *testing.B, addrs []string, n int, timeout time.Duration) time.Time {
	b.Helper()
	last, lastAt := -1.0, time.Now()
	testenv.Eventually(b, timeout, func() error {
		total := 0.0
		for _, addr := range addrs {
			stats, err := scrapeReconciles(addr)
			if err != nil {
				return err // not serving yet
			}
			total += stats.total
		}
		if total != last {
			last, lastAt = total, time.Now()
		}
		if last < float64(n) || time.Since(lastAt) < steadyQuiet {
			return fmt.Errorf("%.0f installation reconciles, the last %s ago", last, time.Since(lastAt).Round(time.Second))
		}
		return nil
	})
	return lastAt
}

// formatWrites is formatKinds of the write requests only.
func formatWrites(before, after map[string]int) string {
	keep := func(m map[string]int) map[string]int {
		out := map[string]int{}
		for k, v := range m {
			for _, w := range []string{"POST ", "PUT ", "PATCH ", "DELETE "} {
				if len(k) > len(w) && k[:len(w)] == w {
					out[k] = v
				}
			}
		}
		return out
	}
	return formatKinds(keep(before), keep(after))
}

// hubBytes sums the JSON size of the objects the hub holds in the fleet
// namespace for the installations — ExtensionInstallations, Secrets
// (revision records and their pieces), HookRequests and Events — as a
// list returns them, and says how they split.
func hubBytes(b *testing.B, c client.Client) (int, string) {
	b.Helper()
	return hubBytesOf(b, c, nil)
}

// hubBytesOf is hubBytes for the installations of the extensions of
// which ext is true (every object of the namespace when ext is nil):
// theirs, the records and pieces they own (a piece
// they share with others counts whole), the HookRequests for them and
// the Events about them. Secrets split into records, pieces (shared
// copies and the private ones of installations past a shared copy's
// owner limit) and other Secrets.
func hubBytesOf(b *testing.B, c client.Client, ext func(string) bool) (int, string) {
	b.Helper()
	ctx := context.Background()
	in := client.InNamespace(fleetNamespace)
	names, uids := map[string]bool{}, map[types.UID]bool{}
	sizes := map[string]int{}
	counts := map[string]int{}
	add := func(kind string, obj any) {
		data, err := json.Marshal(obj)
		must(b, err)
		sizes[kind] += len(data)
		counts[kind]++
	}
	var insts v1alpha1.ExtensionInstallationList
	must(b, c.List(ctx, &insts, in))
	for i := range insts.Items {
		if ext == nil || ext(insts.Items[i].Spec.Extension) {
			names[insts.Items[i].Name], uids[insts.Items[i].UID] = true, true
			add("installations", &insts.Items[i])
		}
	}
	owned := func(refs []metav1.OwnerReference) bool {
		return ext == nil || slices.ContainsFunc(refs, func(o metav1.OwnerReference) bool { return uids[o.UID] })
	}
	var secrets corev1.SecretList
	must(b, c.List(ctx, &secrets, in))
	for i := range secrets.Items {
		sec := &secrets.Items[i]
		if !owned(sec.OwnerReferences) {
			continue
		}
		switch {
		case sec.Type == v1alpha1.RevisionSecretType:
			add("records", sec)
		case sec.Type == v1alpha1.RecordPieceSecretType && strings.Count(sec.Name, ".") == 2:
			add("shared pieces", sec)
		case sec.Type == v1alpha1.RecordPieceSecretType:
			add("private pieces", sec)
		default:
			add("other secrets", sec)
		}
	}
	var hooks v1alpha1.HookRequestList
	must(b, c.List(ctx, &hooks, in))
	for i := range hooks.Items {
		if ext == nil || names[hooks.Items[i].Spec.Installation] {
			add("hookrequests", &hooks.Items[i])
		}
	}
	var events eventsv1.EventList
	must(b, c.List(ctx, &events, in))
	for i := range events.Items {
		if ext == nil || uids[events.Items[i].Regarding.UID] || names[events.Items[i].Regarding.Name] {
			add("events", &events.Items[i])
		}
	}
	total := 0
	summary := ""
	for _, kind := range []string{"installations", "records", "shared pieces", "private pieces", "other secrets", "hookrequests", "events"} {
		total += sizes[kind]
		summary += fmt.Sprintf("%s %d (%d KiB) ", kind, counts[kind], sizes[kind]/1024)
	}
	return total, summary
}

// etcdSize is the size of the hub's etcd database as its API server
// last measured it (apiserver_storage_size_bytes, every 30 s or so).
func etcdSize(hub *testenv.Env) (float64, error) {
	cs, err := kubernetes.NewForConfig(hub.Config)
	if err != nil {
		return 0, err
	}
	data, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "apiserver_storage_size_bytes{"); ok {
			_, value, _ := strings.Cut(rest, "} ")
			return strconv.ParseFloat(strings.TrimSpace(value), 64)
		}
	}
	return 0, errors.New("the hub's API server reports no apiserver_storage_size_bytes")
}

// tcpGate forwards TCP connections from an address on 127.0.0.1 to a
// member API server. Down closes the listener and every connection, so
// the address refuses connections as a stopped API server's would; Up
// listens on the same address again.
type tcpGate struct {
	target string
	addr   string

	mu    sync.Mutex
	l     net.Listener
	conns map[net.Conn]bool
}

// startGate starts a gate to the API server at host (ip:port, with or
// without https://).
func startGate(b *testing.B, host string) *tcpGate {
	b.Helper()
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		u, err = url.Parse("https://" + host) // a rest.Config's Host may lack the scheme
	}
	must(b, err)
	g := &tcpGate{target: u.Host, conns: map[net.Conn]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(b, err)
	g.addr = l.Addr().String()
	g.serve(l)
	b.Cleanup(g.Down)
	return g
}

// kubeconfig returns the kubeconfig at path with its server replaced by
// the gate's address (the API server's certificate is for 127.0.0.1, so
// it stays valid).
func (g *tcpGate) kubeconfig(b *testing.B, path string) []byte {
	b.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	must(b, err)
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + g.addr
	}
	data, err := clientcmd.Write(*cfg)
	must(b, err)
	return data
}

func (g *tcpGate) serve(l net.Listener) {
	g.mu.Lock()
	g.l = l
	g.mu.Unlock()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return // closed by Down
			}
			out, err := net.Dial("tcp", g.target)
			if err != nil {
				_ = in.Close()
				continue
			}
			g.mu.Lock()
			if g.l != l { // Down meanwhile
				g.mu.Unlock()
				_, _ = in.Close(), out.Close()
				continue
			}
			g.conns[in], g.conns[out] = true, true
			g.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				_, _ = dst.Close(), src.Close()
				g.mu.Lock()
				delete(g.conns, dst)
				delete(g.conns, src)
				g.mu.Unlock()
			}
			go pipe(in, out)
			go pipe(out, in)
		}
	}()
}

// Down stops accepting and closes every open connection.
func (g *tcpGate) Down() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.l != nil {
		_ = g.l.Close()
		g.l = nil
	}
	for conn := range g.conns {
		_ = conn.Close()
	}
	g.conns = map[net.Conn]bool{}
}

// Up listens on the gate's address again.
func (g *tcpGate) Up(b *testing.B) {
	b.Helper()
	var l net.Listener
	testenv.Eventually(b, 30*time.Second, func() error {
		var err error
		l, err = net.Listen("tcp", g.addr)
		return err
	})
	g.serve(l)
}
