package bench

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/console"
	"github.com/annex-platform/annex/internal/testenv"
)

// BenchmarkConsoleInstallations measures the console's installations
// page over 1,000 ExtensionInstallations on 3 ManagedClusters (its first
// page: the tree of all 1,000 is built and narrowed, 100 are rendered), their
// status written through the status subresource (no manager runs): the
// server-side time to the first byte and to the last (the page is
// rendered whole before it is sent), the page's size, and the API server
// load: the LISTs and WATCHes the console's informers make when it
// starts, and the requests one page view makes (none: the page reads the
// informers, never a GET per object). ns/op is the full render.
func BenchmarkConsoleInstallations(b *testing.B) {
	const clusters, installations, namespaces = 3, 1000, 10
	env := testenv.Start(b)
	ctx := b.Context()
	c, err := client.New(unlimited(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	seedFleet(b, c, clusters, installations, namespaces)

	counter := &apiLoad{}
	srv, err := console.New(ctx, counter.wrap(unlimited(env.Config)), console.Options{Address: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	startup := counter.snapshot()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	page := func() (ttfb, total time.Duration, size int) {
		var first time.Time
		trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { first = time.Now() }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, ts.URL+"/installations", nil)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		end := time.Now()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /installations: %d\n%s", resp.StatusCode, body)
		}
		const pageSize = 100 // the console's default page
		if got := strings.Count(string(body), `<th scope="row"><a href="/installations/`); got != pageSize ||
			!strings.Contains(string(body), fmt.Sprintf("of %d;", installations)) {
			b.Fatalf("the page lists %d installations of ?, want %d of %d", got, pageSize, installations)
		}
		return first.Sub(start), end.Sub(start), len(body)
	}
	page() // the first view, as a person opening the console

	before := counter.snapshot()
	var ttfb, total time.Duration
	var size, views int
	for b.Loop() {
		t1, t2, n := page()
		ttfb, total, size, views = ttfb+t1, total+t2, n, views+1
	}
	during := counter.snapshot().sub(before)
	b.ReportMetric(float64(ttfb.Microseconds())/float64(views)/1000, "ttfb-ms")
	b.ReportMetric(float64(total.Microseconds())/float64(views)/1000, "render-ms")
	b.ReportMetric(float64(size)/1024, "page-KiB")
	b.ReportMetric(float64(during.total())/float64(views), "apireqs/page")
	b.ReportMetric(float64(startup.lists), "startup-lists")
	b.ReportMetric(float64(startup.watchLists), "startup-watchlists")
	b.ReportMetric(float64(startup.watches), "startup-watches")
	b.ReportMetric(float64(startup.gets), "startup-gets")
	b.ReportMetric(float64(startup.other), "startup-posts")
}

// seedFleet creates clusters ManagedClusters (reachable, with a version),
// an Extension, and installations spread over the clusters and
// namespaces, with a status as the manager would write it: three in four
// Ready, the rest waiting for health.
func seedFleet(b *testing.B, c client.Client, clusters, installations, namespaces int) {
	b.Helper()
	ctx := b.Context()
	for i := range namespaces {
		createNamespace(b, c, fmt.Sprintf("console-bench-%d", i))
	}
	now := metav1.Now()
	for i := range clusters {
		mc := &v1alpha1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cluster-%d", i)},
			Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{
				Name: fmt.Sprintf("cluster-%d-kubeconfig", i), Namespace: "default"}},
		}
		if err := c.Create(ctx, mc); err != nil {
			b.Fatal(err)
		}
		mc.Status = v1alpha1.ManagedClusterStatus{KubernetesVersion: "1.37.1", NodeCount: 3, Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionReachable, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded,
			Message: "API server answers", LastTransitionTime: now, ObservedGeneration: mc.Generation}}}
		if err := c.Status().Update(ctx, mc); err != nil {
			b.Fatal(err)
		}
	}
	ext := &v1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-app"},
		Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			{Version: "1.1.0", Source: v1alpha1.ArtifactSource{URL: "https://charts.example/bench-app-1.1.0.tgz"}},
			{Version: "1.0.0", Source: v1alpha1.ArtifactSource{URL: "https://charts.example/bench-app-1.0.0.tgz"}},
		}},
	}
	if err := c.Create(ctx, ext); err != nil {
		b.Fatal(err)
	}
	err := parallel(installations, func(i int) error {
		inst := &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("console-bench-%d", i%namespaces), Name: fmt.Sprintf("app-%04d", i)},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: "bench-app", Version: "1.x", Cluster: fmt.Sprintf("cluster-%d", i%clusters),
				Values: &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}},
		}
		if err := c.Create(ctx, inst); err != nil {
			return err
		}
		inst.Status = benchStatus(inst, i%4 != 0, now)
		return c.Status().Update(ctx, inst)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// benchStatus is the status the manager writes for an installed app of
// four objects, Ready or still waiting for health.
func benchStatus(inst *v1alpha1.ExtensionInstallation, ready bool, now metav1.Time) v1alpha1.ExtensionInstallationStatus {
	st := v1alpha1.ExtensionInstallationStatus{
		ObservedGeneration: inst.Generation, ResolvedVersion: "1.1.0", InstalledVersion: "1.1.0", ClusterVersion: "1.37.1",
		InventoryCount: 4,
		History: []v1alpha1.Revision{{Number: 1, Version: "1.1.0", ValuesDigest: "sha256:" + strings.Repeat("a", 64),
			ManifestDigest: "sha256:" + strings.Repeat("b", 64), AppliedAt: now}},
	}
	for _, kind := range []string{"ServiceAccount", "ConfigMap", "Service", "Deployment"} {
		st.Inventory = append(st.Inventory, v1alpha1.ObjectReference{Version: "v1", Kind: kind, Namespace: inst.Namespace, Name: inst.Name})
	}
	ready1 := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded,
		Message: "bench-app 1.1.0 is installed and healthy (4 objects)"}
	if !ready {
		ready1.Status, ready1.Reason = metav1.ConditionFalse, v1alpha1.ReasonWaitingForHealth
		ready1.Message = "1 of 4 objects not ready: Deployment " + inst.Namespace + "/" + inst.Name + ": Deployment not Available"
	}
	for _, c := range []metav1.Condition{
		{Type: v1alpha1.ConditionResolved, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, Message: "chose bench-app 1.1.0 for Kubernetes v1.37.1"},
		{Type: v1alpha1.ConditionInstalled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSucceeded, Message: "applied bench-app 1.1.0 (revision 1, 4 objects)"},
		ready1,
	} {
		c.ObservedGeneration, c.LastTransitionTime = inst.Generation, now
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

// apiLoad counts the requests a client sends to the API server, by kind:
// LIST (a GET of a collection), WATCH, GET of one object, and the rest
// (POSTs: the console asks who the user is and what they may list).
type apiLoad struct {
	mu sync.Mutex
	apiCounts
}

// apiCounts: watchLists are LISTs streamed as a WATCH (client-go's
// WatchList: watch=true&sendInitialEvents=true), which informers use
// when the API server supports them.
type apiCounts struct{ lists, watchLists, watches, gets, other int }

func (c apiCounts) total() int { return c.lists + c.watchLists + c.watches + c.gets + c.other }

func (c apiCounts) sub(d apiCounts) apiCounts {
	return apiCounts{c.lists - d.lists, c.watchLists - d.watchLists, c.watches - d.watches, c.gets - d.gets, c.other - d.other}
}

func (l *apiLoad) snapshot() apiCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.apiCounts
}

func (l *apiLoad) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			l.count(req)
			return rt.RoundTrip(req)
		})
	}
	return out
}

func (l *apiLoad) count(req *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case req.Method != http.MethodGet:
		l.other++
	case req.URL.Query().Get("watch") == "true" && req.URL.Query().Get("sendInitialEvents") == "true":
		l.watchLists++
	case req.URL.Query().Get("watch") == "true":
		l.watches++
	case isCollection(req.URL.Path):
		l.lists++
	default:
		l.gets++
	}
}

// isCollection says whether a resource path names a collection:
// /api/v1/[namespaces/NS/]PLURAL or /apis/GROUP/VERSION/[namespaces/NS/]PLURAL.
// Discovery paths (/api, /apis/GROUP/VERSION) count as gets.
func isCollection(path string) bool {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return false
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	return len(segs) == 1
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
