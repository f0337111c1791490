package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// fleetExtensions is how many extensions the benchmark's profile holds.
const fleetExtensions = 10

// BenchmarkFleet times one ExtensionProfile of 10 extensions (each the
// system benchmark's 4-object chart) from its creation until every
// installation is Ready, with `annex manager` as a subprocess: given to the
// hub alone (10 installations), and to 3 managed clusters, each its own API
// server (30 installations), in the same run. It reports the manager's peak
// RSS and the API requests per installation that the hub and the managed
// clusters served (counted by each kube-apiserver's
// apiserver_request_total, less the benchmark's own requests).
func BenchmarkFleet(b *testing.B) {
	b.Run("hub", func(b *testing.B) { benchFleet(b, 0) })
	b.Run("3clusters", func(b *testing.B) { benchFleet(b, 3) })
}

func benchFleet(b *testing.B, clusters int) {
	ctx := context.Background()
	work := b.TempDir()
	hub := testenv.Start(b)
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := hub.WriteKubeconfig(kubeconfig); err != nil {
		b.Fatal(err)
	}
	var charts []helmrepo.Chart
	for i := range fleetExtensions {
		c := benchChart()
		c.Name = fmt.Sprintf("fleet-%d", i)
		charts = append(charts, c)
	}
	repo := helmrepo.NewServer(b, charts...)
	c := hub.Client
	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}))
	must(b, c.Create(ctx, &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "fleet"},
		Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}}))

	managed := make([]*testenv.Env, clusters)
	for i := range managed {
		managed[i] = testenv.Start(b)
		path := filepath.Join(work, fmt.Sprintf("cluster-%d.kubeconfig", i))
		must(b, managed[i].WriteKubeconfig(path))
		data, err := os.ReadFile(path)
		must(b, err)
		must(b, managed[i].Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}))
		name := fmt.Sprintf("cluster-%d", i)
		must(b, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name}, Data: map[string][]byte{"kubeconfig": data}}))
		must(b, c.Create(ctx, &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": "bench"}},
			Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: "fleet", Name: name, Key: "kubeconfig"}}}))
	}
	mgr := startManager(b, work, kubeconfig)
	// Everything but the profile is ready: the Extensions are synced and
	// the clusters are reachable.
	waitUntil(b, 2*time.Minute, func() error {
		var exts v1alpha1.ExtensionList
		if err := c.List(ctx, &exts); err != nil || len(exts.Items) < fleetExtensions {
			return fmt.Errorf("%d Extensions (err=%v)", len(exts.Items), err)
		}
		var mcs v1alpha1.ManagedClusterList
		if err := c.List(ctx, &mcs); err != nil {
			return err
		}
		for _, mc := range mcs.Items {
			if !meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReachable) {
				return fmt.Errorf("%s not reachable yet", mc.Name)
			}
		}
		return nil
	})

	hubBefore := requestsServed(b, hub.Config)
	hubKindsBefore := requestsByKind(b, hub.Config)
	clustersBefore := 0
	for _, m := range managed {
		clustersBefore += requestsServed(b, m.Config)
	}
	profile := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Spec: v1alpha1.ExtensionProfileSpec{
		Namespace: "fleet", IncludeHub: clusters == 0,
	}}
	if clusters > 0 {
		profile.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "bench"}}
	}
	for i := range fleetExtensions {
		profile.Spec.Extensions = append(profile.Spec.Extensions, v1alpha1.ProfileExtension{Name: fmt.Sprintf("fleet-%d", i), Version: "*"})
	}
	want := fleetExtensions * max(clusters, 1)
	start := time.Now()
	must(b, c.Create(ctx, profile))
	polls := 0
	waitUntil(b, 5*time.Minute, func() error {
		polls++
		got := &v1alpha1.ExtensionProfile{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(profile), got); err != nil {
			return err
		}
		if int(got.Status.ReadyInstallations) < want || !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("%d of %d installations Ready", got.Status.ReadyInstallations, want)
		}
		return nil
	})
	elapsed := time.Since(start)
	// The benchmark's own requests to the hub: the profile's create and
	// its polls, and one scrape of each server's metrics before.
	hubServed := requestsServed(b, hub.Config) - hubBefore - 1 - polls - 1
	clustersServed := -clustersBefore
	for _, m := range managed {
		clustersServed += requestsServed(b, m.Config) - 1
	}
	b.ReportMetric(elapsed.Seconds(), "s-to-ready")
	b.ReportMetric(float64(want), "installations")
	b.ReportMetric(float64(hubServed)/float64(want), "hub-req/inst")
	if clusters > 0 {
		b.ReportMetric(float64(clustersServed)/float64(want), "cluster-req/inst")
	}
	b.ReportMetric(mgr.Peak(b), "peak-MiB")
	b.Logf("%d installations on %d clusters Ready in %.2f s; hub served %d requests, managed clusters %d; manager peak %.1f MiB; loadavg %s",
		want, max(clusters, 1), elapsed.Seconds(), hubServed, clustersServed, mgr.Peak(b), loadavg())
	b.Logf("hub requests by kind (the benchmark's own included): %s", formatKinds(hubKindsBefore, requestsByKind(b, hub.Config)))
}

// requestsServed sums apiserver_request_total of the API server cfg
// reaches: every request it has answered since it started.
func requestsServed(b *testing.B, cfg *rest.Config) int {
	b.Helper()
	total := 0
	for _, n := range requestsByKind(b, cfg) {
		total += n
	}
	return total
}

// requestsByKind reads apiserver_request_total of the API server cfg
// reaches by "VERB resource[/subresource]" (the verb as the API server
// counts it: LIST, WATCH, APPLY, …).
func requestsByKind(b *testing.B, cfg *rest.Config) map[string]int {
	b.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	must(b, err)
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	must(b, err)
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			continue
		}
		labels := line[len("apiserver_request_total{"):strings.LastIndexByte(line, '}')]
		kind := metricLabel(labels, "verb") + " " + metricLabel(labels, "resource")
		if sub := metricLabel(labels, "subresource"); sub != "" {
			kind += "/" + sub
		}
		out[kind] += int(v)
	}
	return out
}

// metricLabel is the value of label name in a Prometheus text line's
// label set (a="x",b="y"), "" when absent.
func metricLabel(labels, name string) string {
	i := strings.Index(","+labels, ","+name+"=\"")
	if i < 0 {
		return ""
	}
	rest := labels[i+len(name)+2:]
	return rest[:strings.IndexByte(rest, '"')]
}

func waitUntil(b *testing.B, timeout time.Duration, f func() error) {
	b.Helper()
	testenv.Eventually(b, timeout, f)
}

func must(b testing.TB, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
