package metrics_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/testenv/withmanager"
)

// env is one real kube-apiserver + etcd with the Annex manager running
// against it and serving its metrics on metricsAddr, as `annex manager`
// does. The tests run one after the other and compare the metrics with
// what they were before each step.
var (
	env         *testenv.Env
	metricsAddr string
)

func TestMain(m *testing.M) {
	metricsAddr = freeAddr()
	withmanager.MainWith(m, &env, func(o *manager.Options) { o.MetricsAddr = metricsAddr })
}

// freeAddr returns a 127.0.0.1 address with a port free a moment ago:
// the manager's metrics server takes an address, not a listener.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// scrape reads the manager's metrics endpoint over HTTP.
func scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	var lastErr error
	for range 50 { // the server starts with the manager
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			lastErr = err
			time.Sleep(100 * time.Millisecond)
			continue
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %s", resp.Status)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("parsing /metrics: %v", err)
		}
		return fams
	}
	t.Fatalf("GET /metrics: %v", lastErr)
	return nil
}

// sample is the value of the series of name with exactly labels: a
// gauge's or a counter's value, a histogram's count. found is false when
// there is no such series.
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (v float64, found bool) {
	fam := fams[name]
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.Label {
			match = match && labels[l.GetName()] == l.GetValue()
		}
		if !match {
			continue
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// value is sample, 0 when absent.
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	v, _ := sample(fams, name, labels)
	return v
}

// configChart is a chart of one ConfigMap: healthy as soon as applied.
func configChart(name string) helmrepo.Chart {
	return helmrepo.Chart{Name: name, Version: "1.0.0", Files: map[string]string{
		"values.yaml":       "message: hello\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  message: {{ .Values.message | quote }}\n",
	}}
}

// setup creates a namespace named after the test, a Helm repository
// serving chart, and a Catalog of it (named like the namespace) synced
// every second; it waits until the catalog is Ready.
func setup(t *testing.T, chart helmrepo.Chart) (string, *helmrepo.Server) {
	t.Helper()
	ctx := context.Background()
	ns := strings.ToLower(t.Name())
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	repo := helmrepo.NewServer(t, chart)
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: v1alpha1.CatalogSpec{
			Source:   v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}},
			Interval: metav1.Duration{Duration: time.Second},
		},
	}
	if err := env.Client.Create(ctx, cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cat) })
	testenv.Eventually(t, 30*time.Second, func() error {
		got := &v1alpha1.Catalog{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cat), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("catalog not ready: %+v", got.Status.Conditions)
		}
		return nil
	})
	return ns, repo
}

// waitReady waits until the installation is Ready for its generation.
func waitReady(t *testing.T, key types.NamespacedName) *v1alpha1.ExtensionInstallation {
	t.Helper()
	got := &v1alpha1.ExtensionInstallation{}
	testenv.Eventually(t, 60*time.Second, func() error {
		if err := env.Client.Get(context.Background(), key, got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
			return fmt.Errorf("%s not Ready: %+v", key, got.Status.Conditions)
		}
		return nil
	})
	return got
}

// eventReasons lists the reasons of the Events (events.k8s.io/v1) in ns
// about the object of kind and name, oldest first, as "Type Reason". An
// Event recorded again (a series) is listed as many times as it was.
func eventReasons(t *testing.T, ns, kind, name string) []string {
	t.Helper()
	var evs eventsv1.EventList
	if err := env.Client.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(evs.Items, func(a, b eventsv1.Event) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	var out []string
	for _, e := range evs.Items {
		if e.Regarding.Kind != kind || e.Regarding.Name != name {
			continue
		}
		times := 1
		if e.Series != nil {
			times = int(e.Series.Count)
		}
		for range times {
			out = append(out, e.Type+" "+e.Reason)
		}
	}
	return out
}

// waitEvents waits until the object has Events with every one of want
// ("Type Reason").
func waitEvents(t *testing.T, ns, kind, name string, want ...string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() error {
		got := eventReasons(t, ns, kind, name)
		for _, w := range want {
			if !slices.Contains(got, w) {
				return fmt.Errorf("%s %s/%s: events %v, want %q among them", kind, ns, name, got, w)
			}
		}
		return nil
	})
}

var hub = map[string]string{"cluster": metrics.HubCluster}

func installations(state string) map[string]string {
	return map[string]string{"state": state, "cluster": metrics.HubCluster}
}

// TestMetricsFollowAnInstallation installs, drifts and deletes one
// installation, and breaks and mends its catalog's source, reading the
// metrics endpoint after each step.
func TestMetricsFollowAnInstallation(t *testing.T) {
	ctx := context.Background()
	started := time.Now()
	ns, repo := setup(t, configChart("metricsapp"))

	// The catalog's sync is recorded: when, and no error so far.
	fams := scrape(t)
	synced, found := sample(fams, "annex_catalog_last_sync_timestamp_seconds", map[string]string{"catalog": ns})
	if !found || synced < float64(started.Unix()-1) {
		t.Fatalf("annex_catalog_last_sync_timestamp_seconds{catalog=%q} = %v (found %v), want a time after the test began (%d)", ns, synced, found, started.Unix())
	}
	if errs, found := sample(fams, "annex_catalog_sync_errors_total", map[string]string{"catalog": ns}); !found || errs != 0 {
		t.Fatalf("annex_catalog_sync_errors_total{catalog=%q} = %v (found %v), want 0", ns, errs, found)
	}
	// Catalogs are cluster-scoped: their Events are in default.
	waitEvents(t, metav1.NamespaceDefault, "Catalog", ns, "Normal Synced")

	// Install: counted as Reconciling or Ready, then Ready; the steps'
	// durations are observed.
	readyBefore := value(fams, "annex_installations", installations(metrics.StateReady))
	resolves := value(fams, "annex_resolve_duration_seconds", nil)
	renders := value(fams, "annex_render_duration_seconds", map[string]string{"engine": "Helm"})
	installs := value(fams, "annex_apply_duration_seconds", map[string]string{"operation": "install"})
	total := func(fams map[string]*dto.MetricFamily) float64 {
		sum := 0.0
		for _, st := range metrics.States {
			sum += value(fams, "annex_installations", installations(st))
		}
		return sum
	}
	totalBefore := total(fams)

	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "metricsapp", Interval: metav1.Duration{Duration: time.Second}},
	}
	if err := env.Client.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() error {
		if got := total(scrape(t)); got != totalBefore+1 {
			return fmt.Errorf("annex_installations on the hub sum to %v, want %v", got, totalBefore+1)
		}
		return nil
	})
	waitReady(t, client.ObjectKeyFromObject(inst))
	testenv.Eventually(t, 10*time.Second, func() error {
		fams := scrape(t)
		if got := value(fams, "annex_installations", installations(metrics.StateReady)); got != readyBefore+1 {
			return fmt.Errorf(`annex_installations{state="Ready",cluster="hub"} = %v, want %v`, got, readyBefore+1)
		}
		return nil
	})
	fams = scrape(t)
	for _, c := range []struct {
		name   string
		labels map[string]string
		before float64
	}{
		{"annex_resolve_duration_seconds", nil, resolves},
		{"annex_render_duration_seconds", map[string]string{"engine": "Helm"}, renders},
		{"annex_apply_duration_seconds", map[string]string{"operation": "install"}, installs},
	} {
		if got := value(fams, c.name, c.labels); got <= c.before {
			t.Errorf("%s%v: %v observations, want more than the %v before the install", c.name, c.labels, got, c.before)
		}
	}
	// One Event tells the install (and, when it became Ready in the same
	// reconcile, that it is Ready: then there is no Ready Event of its own).
	waitEvents(t, ns, "ExtensionInstallation", "web", "Normal Installed")

	// Drift: a changed object is restored and counted.
	corrections := value(fams, "annex_drift_corrections_total", hub)
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, cm); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["message"] = "tampered"
	if err := env.Client.Patch(ctx, cm, patch, client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		if got := value(scrape(t), "annex_drift_corrections_total", hub); got <= corrections {
			return fmt.Errorf(`annex_drift_corrections_total{cluster="hub"} = %v, want more than %v`, got, corrections)
		}
		return nil
	})
	waitEvents(t, ns, "ExtensionInstallation", "web", "Normal DriftCorrected")

	// The catalog's source goes down: errors are counted, the last good
	// sync stays where it was; it comes back: the sync time moves on.
	repo.SetDown(true)
	testenv.Eventually(t, 30*time.Second, func() error {
		if got := value(scrape(t), "annex_catalog_sync_errors_total", map[string]string{"catalog": ns}); got < 1 {
			return fmt.Errorf("annex_catalog_sync_errors_total{catalog=%q} = %v, want at least 1", ns, got)
		}
		return nil
	})
	waitEvents(t, metav1.NamespaceDefault, "Catalog", ns, "Warning FetchFailed")
	lastGood := value(scrape(t), "annex_catalog_last_sync_timestamp_seconds", map[string]string{"catalog": ns})
	repo.SetDown(false)
	testenv.Eventually(t, 30*time.Second, func() error {
		if got := value(scrape(t), "annex_catalog_last_sync_timestamp_seconds", map[string]string{"catalog": ns}); got <= lastGood {
			return fmt.Errorf("annex_catalog_last_sync_timestamp_seconds{catalog=%q} = %v, want past %v", ns, got, lastGood)
		}
		return nil
	})
	waitEvents(t, metav1.NamespaceDefault, "Catalog", ns, "Normal FetchRecovered")

	// Delete: the installation leaves the gauges.
	if err := env.Client.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() error {
		fams := scrape(t)
		if got := total(fams); got != totalBefore {
			return fmt.Errorf("annex_installations on the hub sum to %v, want %v again", got, totalBefore)
		}
		if got := value(fams, "annex_installations", installations(metrics.StateReady)); got != readyBefore {
			return fmt.Errorf(`annex_installations{state="Ready",cluster="hub"} = %v, want %v again`, got, readyBefore)
		}
		return nil
	})
	waitEvents(t, ns, "ExtensionInstallation", "web", "Normal Uninstalled")

	// Nothing was told twice: each Event above is one transition. Ready
	// and Uninstalling have Events of their own only when they came in a
	// later reconcile than the apply, or before the uninstall's end.
	reasons := eventReasons(t, ns, "ExtensionInstallation", "web")
	for _, reason := range []string{"Normal Installed", "Normal Uninstalled"} {
		if n := count(reasons, reason); n != 1 {
			t.Errorf("%d Events %q, want 1: %v", n, reason, reasons)
		}
	}
	for _, reason := range []string{"Normal Ready", "Normal Uninstalling"} {
		if n := count(reasons, reason); n > 1 {
			t.Errorf("%d Events %q, want at most 1: %v", n, reason, reasons)
		}
	}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestApprovalWaitIsCounted holds a first install for approval: it is
// counted as waiting at the approval gate, with an Event, until the
// policy goes.
func TestApprovalWaitIsCounted(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, configChart("metricsgated"))
	approval := map[string]string{"gate": metrics.GateApproval, "cluster": metrics.HubCluster}
	waitingBefore := value(scrape(t), "annex_installations_waiting", approval)

	policy := &v1alpha1.ApprovalPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec:       v1alpha1.ApprovalPolicySpec{Selector: v1alpha1.ApprovalSelector{Namespaces: []string{ns}}, Preset: v1alpha1.ApprovalManual},
	}
	if err := env.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), policy) })
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gated"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "metricsgated"},
	}
	if err := env.Client.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() error {
		if got := value(scrape(t), "annex_installations_waiting", approval); got != waitingBefore+1 {
			return fmt.Errorf(`annex_installations_waiting{gate="approval",cluster="hub"} = %v, want %v`, got, waitingBefore+1)
		}
		return nil
	})
	waitEvents(t, ns, "ExtensionInstallation", "gated", "Normal ApprovalRequired")

	// Without the policy the change needs no approval: it goes on.
	if err := env.Client.Delete(ctx, policy); err != nil {
		t.Fatal(err)
	}
	waitReady(t, client.ObjectKeyFromObject(inst))
	testenv.Eventually(t, 10*time.Second, func() error {
		if got := value(scrape(t), "annex_installations_waiting", approval); got != waitingBefore {
			return fmt.Errorf(`annex_installations_waiting{gate="approval",cluster="hub"} = %v, want %v again`, got, waitingBefore)
		}
		return nil
	})
	if n := count(eventReasons(t, ns, "ExtensionInstallation", "gated"), "Normal ApprovalRequired"); n != 1 {
		t.Errorf("%d Events ApprovalRequired, want 1", n)
	}
}
