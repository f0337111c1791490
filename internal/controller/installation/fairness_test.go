package installation_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/controller/installation"
	"github.com/annex-platform/annex/internal/testenv"
)

// A managed cluster that stops answering holds at most its share of the
// installation workers: with more of its installations waiting than
// there are workers (32), each blocked in a request that never returns,
// the installations of another cluster still install. The bound stated:
// a stalled cluster costs the others a quarter of the workers, never
// all of them. Once the cluster answers again, its installations
// complete, and everything uninstalls.
func TestStalledClusterHoldsOnlyItsShare(t *testing.T) {
	ns, _ := setup(t, podinfoChart("share", "1.0.0", nil))
	healthy := ns + "-ok"
	// The namespace exists on both clusters: the installations share it.
	edge := edgeCluster(t, ns, healthy)
	if err := edge.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	stalled := ns + "-stalled"
	gate := stallingCluster(t, ns, stalled)

	// More installations on the stalled cluster than there are workers.
	gate.stall()
	const onStalled, onHealthy = installation.DefaultWorkers + 2, 5
	var all []*v1alpha1.ExtensionInstallation
	for i := range onStalled {
		all = append(all, install(t, ns, fmt.Sprintf("s%02d", i), "share", "1.0.x", func(in *v1alpha1.ExtensionInstallation) { in.Spec.Cluster = stalled }))
	}
	eventually(t, 60*time.Second, func() error {
		if n := gate.held.Load(); n < 2 {
			return fmt.Errorf("%d requests to the stalled cluster held, want its reconciles blocked", n)
		}
		return nil
	})

	// The healthy cluster's installations install while the stalled
	// cluster's reconciles stay blocked: a worker pool exhausted by the
	// stalled cluster would never get to them.
	for i := range onHealthy {
		all = append(all, install(t, ns, fmt.Sprintf("h%02d", i), "share", "1.0.x", func(in *v1alpha1.ExtensionInstallation) { in.Spec.Cluster = healthy }))
	}
	for _, in := range all[onStalled:] {
		waitCondition(t, in, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	}
	if !gate.stalled() {
		t.Fatal("the stalled cluster answered before the healthy installations were Ready")
	}
	for _, in := range all[:onStalled] {
		got, err := getInstallation(t, ns, in.Name)
		if err == nil && meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
			t.Fatalf("%s on the stalled cluster is Ready while its cluster answers nothing", in.Name)
		}
	}

	// The cluster answers again: its installations complete.
	gate.release()
	eventually(t, 3*time.Minute, func() error {
		ready := 0
		for _, in := range all {
			got, err := getInstallation(t, ns, in.Name)
			if err == nil && meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
				ready++
			}
		}
		if ready < len(all) {
			return fmt.Errorf("%d of %d installations Ready", ready, len(all))
		}
		return nil
	})
	for _, in := range all {
		if err := env.Client.Delete(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range all {
		waitGone(t, ns, in.Name)
	}
}

// stallGate is an API server's front that can stop answering: while
// stalled it holds every request but discovery (the version and the
// lists of served kinds, whose client gives up after a timeout and would
// free its worker by itself) until released.
type stallGate struct {
	mu      sync.Mutex
	waiting chan struct{} // closed on release; nil while answering
	held    atomic.Int64  // requests held so far
}

func (g *stallGate) stall() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting = make(chan struct{})
}

func (g *stallGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waiting != nil {
		close(g.waiting)
		g.waiting = nil
	}
}

func (g *stallGate) stalled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting != nil
}

// isDiscovery reports whether path is /version, /api, /apis or the
// discovery of a group or group version.
func isDiscovery(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "version":
		return true
	case "api":
		return len(parts) <= 2
	case "apis":
		return len(parts) <= 3
	}
	return false
}

// stallingCluster starts an API server (with the namespace ns) behind a
// stallGate and registers it as the ManagedCluster name, its kubeconfig
// in a Secret of ns.
func stallingCluster(t *testing.T, ns, name string) *stallGate {
	t.Helper()
	member := testenv.Start(t)
	if err := member.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(member.Config)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(member.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	if target.Scheme == "" {
		target, _ = url.Parse("https://" + member.Config.Host)
	}
	g := &stallGate{}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport,
	}
	// The proxy's errors (held requests whose client gave up) are expected.
	quiet := log.New(io.Discard, "", 0)
	proxy.ErrorLog = quiet
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		waiting := g.waiting
		g.mu.Unlock()
		if waiting != nil && !isDiscovery(r.URL.Path) {
			g.held.Add(1)
			select {
			case <-waiting:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = quiet
	srv.StartTLS()
	t.Cleanup(func() {
		g.release()
		srv.CloseClientConnections()
		srv.Close()
	})

	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters[name] = &clientcmdapi.Cluster{Server: srv.URL, InsecureSkipTLSVerify: true}
	kubeconfig.AuthInfos[name] = &clientcmdapi.AuthInfo{}
	kubeconfig.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kubeconfig.CurrentContext = name
	data, err := clientcmd.Write(*kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	registerCluster(t, ns, name, data)
	return g
}
