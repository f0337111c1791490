package bench

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

const (
	// statusInstallations on statusClusters ManagedClusters, in
	// statusNamespaces namespaces, of statusExtensions extensions.
	statusInstallations = 1000
	statusClusters      = 3
	statusNamespaces    = 10
	statusExtensions    = 20
	// statusRuns is how many times one benchmark iteration runs status;
	// the medians are reported (make bench-system runs -benchtime 1x).
	statusRuns = 15
)

// BenchmarkStatus1000 measures `annexctl status` over a fleet of 1,000
// installations on 3 ManagedClusters: the time from the start to the
// first byte of the tree and to the whole tree (the status data read
// from a real API server and rendered as text), and the requests it
// sends — by kind (list, get of one object, watch, discovery), counted
// by a RoundTripper around the client's transport. Status is written
// directly through the status subresource as Annex would (Ready,
// dependencies waiting, plans running, approvals pending, stalled ones),
// with an inventory of 12 objects and two revisions each, so objects
// have a realistic size; no manager runs. The client is built once, as
// annexctl builds it once per run; its discovery requests are reported
// separately (discovery-requests, from the first run).
func BenchmarkStatus1000(b *testing.B) {
	env := testenv.Start(b)
	seed := client.Options{Scheme: env.Scheme}
	c, err := client.New(unlimited(env.Config), seed)
	must(b, err)
	writeStatusFleet(b, c)

	counter := &kindCounter{}
	cfg := unlimited(env.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{counter, rt} }
	reader, err := client.New(cfg, seed)
	must(b, err)

	var read, ttfb, full []time.Duration
	var perRun requestKinds
	var bytesOut int
	b.ResetTimer()
	for range b.N {
		for run := range statusRuns {
			before := counter.snapshot()
			w := &firstByteWriter{}
			start := time.Now()
			tree, err := cli.Status(b.Context(), reader, cli.StatusFilter{})
			must(b, err)
			read = append(read, time.Since(start))
			must(b, cli.WriteStatus(w, cli.OutputTable, tree, start))
			full = append(full, time.Since(start))
			ttfb = append(ttfb, w.first.Sub(start))
			if tree.Total != statusInstallations || len(tree.Clusters) != statusClusters {
				b.Fatalf("status listed %d installations on %d clusters, want %d on %d", tree.Total, len(tree.Clusters), statusInstallations, statusClusters)
			}
			perRun = counter.snapshot().sub(before)
			if run == 0 {
				// The client discovers the API once, as annexctl does
				// once per invocation.
				b.ReportMetric(float64(perRun.discovery), "discovery-requests")
			}
			bytesOut = w.buf.Len()
		}
	}
	b.StopTimer()
	b.ReportMetric(ms(median(read)), "read-ms")
	b.ReportMetric(ms(median(ttfb)), "ttfb-ms")
	b.ReportMetric(ms(median(full)), "render-ms")
	b.ReportMetric(ms(slices.Max(full)), "render-max-ms")
	b.ReportMetric(float64(perRun.total-perRun.discovery), "requests/run")
	b.ReportMetric(float64(perRun.lists), "lists/run")
	b.ReportMetric(float64(perRun.gets), "gets/run")
	b.ReportMetric(float64(perRun.watches), "watches/run")
	b.ReportMetric(float64(bytesOut), "output-bytes")
	b.Logf("status of %d installations on %d clusters: read %s, first byte %s, whole tree %s (medians of %d runs); %d requests a run: %d lists, %d gets of one object, %d watches",
		statusInstallations, statusClusters, median(read).Round(time.Millisecond), median(ttfb).Round(time.Millisecond), median(full).Round(time.Millisecond), len(full),
		perRun.total-perRun.discovery, perRun.lists, perRun.gets, perRun.watches)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// firstByteWriter keeps what is written and when the first write came.
type firstByteWriter struct {
	buf   bytes.Buffer
	first time.Time
}

func (w *firstByteWriter) Write(p []byte) (int, error) {
	if w.first.IsZero() {
		w.first = time.Now()
	}
	return w.buf.Write(p)
}

// requestKinds counts requests: lists of a collection, gets of one
// object, watches, and discovery (/api, /apis).
type requestKinds struct{ total, lists, gets, watches, discovery int }

func (r requestKinds) sub(o requestKinds) requestKinds {
	return requestKinds{r.total - o.total, r.lists - o.lists, r.gets - o.gets, r.watches - o.watches, r.discovery - o.discovery}
}

type kindCounter struct {
	mu sync.Mutex
	n  requestKinds
}

func (k *kindCounter) snapshot() requestKinds {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n
}

type countingTransport struct {
	k    *kindCounter
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.k.mu.Lock()
	t.k.n.total++
	switch kind := classify(req); kind {
	case "list":
		t.k.n.lists++
	case "get":
		t.k.n.gets++
	case "watch":
		t.k.n.watches++
	case "discovery":
		t.k.n.discovery++
	}
	t.k.mu.Unlock()
	return t.next.RoundTrip(req)
}

// classify tells a request's kind from its path: /apis/GROUP/VERSION
// [/namespaces/NS]/RESOURCE is a collection, one more segment an object.
func classify(req *http.Request) string {
	if req.URL.Query().Get("watch") == "true" {
		return "watch"
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 1 && parts[0] == "api":
		rest = parts[min(2, len(parts)):]
	case len(parts) >= 1 && parts[0] == "apis":
		rest = parts[min(3, len(parts)):]
	default:
		return "other"
	}
	if len(rest) == 0 {
		return "discovery"
	}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		rest = rest[2:]
	}
	if req.Method != http.MethodGet {
		return "write"
	}
	if len(rest) == 1 {
		return "list"
	}
	return "get"
}

// writeStatusFleet creates the fleet BenchmarkStatus1000 reads: clusters,
// extensions (each depending on the one before, every fourth), and the
// installations with their status in the mix a real fleet has.
func writeStatusFleet(b *testing.B, c client.Client) {
	ctx := b.Context()
	at := metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: at}
	}
	for i := range statusNamespaces {
		createNamespace(b, c, fmt.Sprintf("team-%d", i))
	}
	for i := range statusClusters {
		mc := &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cluster-%d", i)},
			Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Name: "kc", Namespace: "team-0"}}}
		must(b, c.Create(ctx, mc))
		mc.Status = v1alpha1.ManagedClusterStatus{KubernetesVersion: "1.36.4", Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionReachable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1.36.4")}}
		must(b, c.Status().Update(ctx, mc))
	}
	for i := range statusExtensions {
		v := v1alpha1.ExtensionVersion{Version: "1.0.0", Source: v1alpha1.ArtifactSource{URL: fmt.Sprintf("https://charts.example.com/ext-%d-1.0.0.tgz", i)}}
		if i%4 != 0 {
			v.Dependencies = []v1alpha1.Dependency{{Name: fmt.Sprintf("ext-%d", i-1), Version: "^1"}}
		}
		must(b, c.Create(ctx, &v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ext-%d", i)},
			Spec: v1alpha1.ExtensionSpec{Description: "benchmark extension", Versions: []v1alpha1.ExtensionVersion{v}}}))
	}
	must(b, parallel(statusInstallations, func(i int) error {
		ext := i % statusExtensions
		inst := &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", (i/statusExtensions)%statusNamespaces), Name: fmt.Sprintf("inst-%d", i)},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: fmt.Sprintf("ext-%d", ext), Version: "^1",
				Cluster: fmt.Sprintf("cluster-%d", i%statusClusters)},
		}
		if err := c.Create(ctx, inst); err != nil {
			return err
		}
		inst.Status = fleetStatus(i, cond, at)
		return c.Status().Update(ctx, inst)
	}))
}

// fleetStatus is the status of installation i: nine in ten Ready, the
// rest waiting for a dependency, running a plan, waiting for approval or
// stalled.
func fleetStatus(i int, cond func(string, metav1.ConditionStatus, string, string) metav1.Condition, at metav1.Time) v1alpha1.ExtensionInstallationStatus {
	var inventory []v1alpha1.ObjectReference
	for k := range 12 {
		inventory = append(inventory, v1alpha1.ObjectReference{Group: "apps", Version: "v1", Kind: "Deployment",
			Namespace: "apps", Name: fmt.Sprintf("inst-%d-object-%d", i, k)})
	}
	s := v1alpha1.ExtensionInstallationStatus{ResolvedVersion: "1.0.0", InstalledVersion: "1.0.0", ClusterVersion: "1.36.4",
		Inventory: inventory, InventoryCount: int32(len(inventory)),
		History: []v1alpha1.Revision{
			{Number: 2, Version: "1.0.0", ValuesDigest: "sha256:" + strings.Repeat("a", 64), ManifestDigest: "sha256:" + strings.Repeat("b", 64), AppliedAt: at},
			{Number: 1, Version: "1.0.0", ValuesDigest: "sha256:" + strings.Repeat("c", 64), ManifestDigest: "sha256:" + strings.Repeat("d", 64), AppliedAt: at},
		},
		Plans: []v1alpha1.PlanStatus{{Name: "install", State: v1alpha1.PlanComplete, Revision: 2, Phases: []v1alpha1.PhaseStatus{
			{Name: "crds", State: v1alpha1.PlanComplete, Steps: []v1alpha1.StepStatus{{Name: "apply", State: v1alpha1.PlanComplete}}},
			{Name: "main", State: v1alpha1.PlanComplete, Steps: []v1alpha1.StepStatus{{Name: "apply", State: v1alpha1.PlanComplete}, {Name: "wait", State: v1alpha1.PlanComplete}}},
		}}},
		Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1.0.0"),
			cond(v1alpha1.ConditionInstalled, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1.0.0"),
		},
	}
	ready := cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "installed and healthy (12 objects)")
	switch i % 40 {
	case 1:
		ready = cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDependencyNotReady, "a dependency is not Ready")
	case 2:
		ready = cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPlanRunning, "plan install: step main/wait")
		s.Plans[0].State, s.Plans[0].Phases[1].State = v1alpha1.PlanInProgress, v1alpha1.PlanInProgress
		s.Plans[0].Phases[1].Steps[1].State = v1alpha1.PlanInProgress
	case 3:
		ready = cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonApprovalRequired, "upgrade needs an Approval")
	case 4:
		ready = cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonValuesInvalid, "values.replicas: must be >= 0")
		s.Conditions = append(s.Conditions, cond(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonValuesInvalid, "values.replicas: must be >= 0"))
	}
	s.Conditions = append(s.Conditions, ready)
	return s
}
