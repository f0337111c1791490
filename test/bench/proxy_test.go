package bench

import (
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/annex-platform/annex/internal/apply/reqcount"
)

// countingProxy is an HTTPS (HTTP/2) reverse proxy on 127.0.0.1 that forwards
// every request to the API server as the admin of the config it was
// started with, and counts them. A program under test (the manager, the
// Helm CLI) talks to it through the kubeconfig WriteKubeconfig writes, so
// its requests are counted without changing the program.
type countingProxy struct {
	srv     *httptest.Server
	counter reqcount.Counter

	mu    sync.Mutex
	kinds map[string]int // by "METHOD resource[/subresource][ watch|dry-run]"
}

// startProxy starts a countingProxy to the API server of cfg and closes
// it on b.Cleanup.
func startProxy(b *testing.B, cfg *rest.Config) *countingProxy {
	b.Helper()
	p := &countingProxy{kinds: map[string]int{}}
	transport, err := rest.TransportFor(p.counter.Wrap(cfg))
	if err != nil {
		b.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		b.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport: transport,
		// Stream watch events as they arrive.
		FlushInterval: -1,
		// A watch the client ends is logged as an error; that is noise here.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	// TLS with HTTP/2, as a real API server serves: clients multiplex
	// their requests over one connection instead of dialling a new one
	// whenever more are in flight than HTTP/1.1 keeps idle.
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := p.note(r)
		sw := &statusWriter{ResponseWriter: w}
		rp.ServeHTTP(sw, r)
		if sw.code == http.StatusConflict {
			p.noteConflict(key)
		}
	}))
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	b.Cleanup(p.srv.Close)
	return p
}

// apiserverProfileEnv names an environment variable: when it holds a file
// name, the system benchmark writes a CPU profile of the API server there,
// taken during the first seconds of installing (go tool pprof reads it).
const apiserverProfileEnv = "ANNEX_BENCH_APISERVER_CPUPROFILE"

// apiserverUninstallProfileEnv is apiserverProfileEnv for the first
// seconds of uninstalling.
const apiserverUninstallProfileEnv = "ANNEX_BENCH_APISERVER_UNINSTALL_CPUPROFILE"

// ProfileAPIServer starts taking a CPU profile of the API server, for d,
// when the environment variable env names a file to write it to.
func (p *countingProxy) ProfileAPIServer(b *testing.B, env string, d time.Duration) {
	file := os.Getenv(env)
	if file == "" {
		return
	}
	b.Logf("API server CPU profile (%s) in %s", d, file)
	go func() {
		resp, err := p.srv.Client().Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", p.srv.URL, int(d.Seconds())))
		if err != nil {
			fmt.Fprintf(os.Stderr, "API server profile: %v\n", err)
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(file, data, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "API server profile: %v\n", err)
		}
	}()
}

// WriteKubeconfig writes a kubeconfig without credentials that points at
// the proxy and trusts its certificate.
func (p *countingProxy) WriteKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: p.srv.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	cfg.CurrentContext = "bench"
	return clientcmd.WriteToFile(*cfg, path)
}

// Snapshot returns the counts so far.
func (p *countingProxy) Snapshot() reqcount.Counts { return p.counter.Snapshot() }

// Kinds returns how many requests of each kind ("PATCH deployments",
// "GET extensioninstallations watch") the proxy has seen.
func (p *countingProxy) Kinds() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.kinds)
}

// note counts r and returns its kind.
func (p *countingProxy) note(r *http.Request) string {
	key := r.Method + " " + resourceOf(r.URL.Path)
	q := r.URL.Query()
	switch {
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		key += " watch"
	case q.Has("dryRun"):
		key += " dry-run"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kinds[key]++
	return key
}

// noteConflict counts a request of kind key the API server answered 409
// Conflict (for a POST: AlreadyExists; for a PUT: a stale
// resourceVersion), as the kind "key 409", so a write that bought nothing
// shows next to the writes of its kind.
func (p *countingProxy) noteConflict(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.kinds[key+" 409"]++
}

// statusWriter remembers the status code of the response it writes.
// Unwrap lets http.ResponseController reach the ResponseWriter's Flush, so
// watches still stream.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// resourceOf returns the resource (and subresource) of an API path, e.g.
// "deployments" for /apis/apps/v1/namespaces/x/deployments/y and
// "extensioninstallations/status"; other paths (discovery, /version) are
// returned whole.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return path
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		rest = rest[2:] // namespaces/<ns>/<resource>...
	}
	switch len(rest) {
	case 0:
		return path
	case 1, 2:
		return rest[0]
	default:
		return rest[0] + "/" + rest[2]
	}
}

// formatKinds prints the kinds of requests that differ between before and
// after, most frequent first, for a benchmark log.
func formatKinds(before, after map[string]int) string {
	if after == nil {
		return "by kind with " + proxyEnv + "=1"
	}
	diff := map[string]int{}
	for k, n := range after {
		if d := n - before[k]; d != 0 {
			diff[k] = d
		}
	}
	keys := slices.SortedFunc(maps.Keys(diff), func(a, b string) int {
		if diff[a] != diff[b] {
			return diff[b] - diff[a]
		}
		return strings.Compare(a, b)
	})
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%s: %d", k, diff[k])
	}
	if sb.Len() == 0 {
		return "none"
	}
	return sb.String()
}

// writeFile is os.WriteFile that fails the benchmark.
func writeFile(b *testing.B, path string, data []byte) {
	b.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
}

// clientMetrics counts the manager's requests from its own metrics
// endpoint at addr: client-go's rest_client_requests_total, by method,
// summed over the hosts it talks to (in the system benchmark, the API
// server alone). It does not know resources: Kinds returns nil.
type clientMetrics struct {
	b    *testing.B
	addr string
}

func (m *clientMetrics) Kinds() map[string]int { return nil }

func (m *clientMetrics) Snapshot() reqcount.Counts {
	m.b.Helper()
	var counts reqcount.Counts
	err := scrapeMetrics(m.addr, func(body io.Reader) (err error) {
		counts, err = parseClientRequests(body)
		return err
	})
	if err != nil {
		m.b.Fatal(err)
	}
	return counts
}

// parseClientRequests sums rest_client_requests_total by method from
// metrics in the Prometheus text format. Writes are POST, PUT, PATCH and
// DELETE (the metric does not tell dry runs apart; the manager sends none
// while it is measured).
func parseClientRequests(r io.Reader) (reqcount.Counts, error) {
	out := reqcount.Counts{ByMethod: map[string]int{}}
	err := eachSample(r, func(name string, labels map[string]string, v float64) {
		if name != "rest_client_requests_total" {
			return
		}
		method, n := labels["method"], int(v)
		out.ByMethod[method] += n
		out.Total += n
		switch method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			out.Writes += n
		}
	})
	return out, err
}

func TestParseClientRequests(t *testing.T) {
	metrics := `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 40
rest_client_requests_total{code="404",host="127.0.0.1:6443",method="GET"} 2
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 3
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 5
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="DELETE"} 1
workqueue_adds_total{name="extensioninstallation"} 99
`
	got, err := parseClientRequests(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != 51 || got.Writes != 9 || got.ByMethod["GET"] != 42 || got.ByMethod["PATCH"] != 5 {
		t.Errorf("got %+v, want 51 requests, 9 writes, 42 GET, 5 PATCH", got)
	}
}
