package metrics

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

// States of an installation, the state label of annex_installations.
const (
	// StateReady: Ready is True for the current generation.
	StateReady = "Ready"
	// StateReconciling: Annex is working on it or waiting (for a
	// dependency, health, an approval, a hook, a retry).
	StateReconciling = "Reconciling"
	// StateStalled: a person must act (terminal error, health timeout
	// after remediation, refused hook, deletion held past its timeout).
	StateStalled = "Stalled"
	// StateSuspended: spec.suspend is true.
	StateSuspended = "Suspended"
	// StateDeleting: deletion was requested; the uninstall runs.
	StateDeleting = "Deleting"
)

// States lists every state, in the order the gauges are written.
var States = []string{StateReady, StateReconciling, StateStalled, StateSuspended, StateDeleting}

// Gates an installation can wait at, the gate label of
// annex_installations_waiting.
const (
	GateApproval = news.GateApproval
	GateHooks    = news.GateHooks
)

var (
	// annex_installations{state,cluster}, gauge: installations by state
	// (States) and cluster, from the informer cache at scrape time. Every
	// state of every known cluster is written, 0 included.
	installationsDesc = prometheus.NewDesc("annex_installations",
		"ExtensionInstallations by state (Ready, Reconciling, Stalled, Suspended, Deleting) and cluster.",
		[]string{"state", "cluster"}, nil)
	// annex_installations_waiting{gate,cluster}, gauge: installations
	// whose pending change waits for an Approval (gate="approval") or for
	// hooks to answer (gate="hooks"), from status.change.
	waitingDesc = prometheus.NewDesc("annex_installations_waiting",
		"ExtensionInstallations whose pending change waits at a gate (approval, hooks), by cluster.",
		[]string{"gate", "cluster"}, nil)
	// annex_installations_drifted{cluster}, gauge: installations whose
	// last drift check found objects that differ from the installed
	// revision and were not (yet) corrected (status.drifted).
	driftedDesc = prometheus.NewDesc("annex_installations_drifted",
		"ExtensionInstallations with objects that differ from the installed revision (status.drifted), by cluster.",
		[]string{"cluster"}, nil)
	// annex_managed_cluster_reachable{cluster}, gauge: 1 when the
	// ManagedCluster's Reachable condition is True, else 0.
	reachableDesc = prometheus.NewDesc("annex_managed_cluster_reachable",
		"1 when the ManagedCluster's Reachable condition is True, else 0.",
		[]string{"cluster"}, nil)
)

// cacheCollector computes the gauges above from the objects a reader
// (the manager's informer cache) holds, at scrape time.
type cacheCollector struct {
	mu     sync.Mutex
	reader client.Reader
}

var fromCache = &cacheCollector{}

func init() {
	register(prometheus.Collector(fromCache), "annex_installations")
	names = append(names, "annex_installations_waiting", "annex_installations_drifted", "annex_managed_cluster_reachable")
}

// ReadFrom makes the gauges of installations and clusters read reader,
// which should be the manager's cache: a scrape then costs no API call.
// Until it is called the gauges are absent. A later call replaces the
// reader (a process that builds several managers, as tests do, serves
// the last one's).
func ReadFrom(reader client.Reader) {
	fromCache.mu.Lock()
	defer fromCache.mu.Unlock()
	fromCache.reader = reader
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- installationsDesc
	ch <- waitingDesc
	ch <- driftedDesc
	ch <- reachableDesc
}

// Collect lists installations and clusters from the cache. If the cache
// cannot answer (not synced yet within the scrape's time), the gauges
// are left out of this scrape rather than failing it: the other metrics
// are still served.
func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	reader := c.reader
	c.mu.Unlock()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var insts v1alpha1.ExtensionInstallationList
	var clusters v1alpha1.ManagedClusterList
	if err := reader.List(ctx, &insts, client.UnsafeDisableDeepCopy); err != nil {
		log.Log.WithName("metrics").Info("installation gauges left out of this scrape", "error", err.Error())
		return
	}
	if err := reader.List(ctx, &clusters, client.UnsafeDisableDeepCopy); err != nil {
		log.Log.WithName("metrics").Info("installation gauges left out of this scrape", "error", err.Error())
		return
	}
	counts := Count(insts.Items, clusters.Items)
	for _, cl := range counts.Clusters {
		for _, st := range States {
			ch <- prometheus.MustNewConstMetric(installationsDesc, prometheus.GaugeValue, float64(counts.ByState[Key{st, cl}]), st, cl)
		}
		for _, g := range []string{GateApproval, GateHooks} {
			ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(counts.Waiting[Key{g, cl}]), g, cl)
		}
		ch <- prometheus.MustNewConstMetric(driftedDesc, prometheus.GaugeValue, float64(counts.Drifted[cl]), cl)
	}
	for cl, up := range counts.Reachable {
		v := 0.0
		if up {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(reachableDesc, prometheus.GaugeValue, v, cl)
	}
}

// Key is a (state or gate, cluster) pair.
type Key struct{ Label, Cluster string }

// Counts is what the gauges report.
type Counts struct {
	// Clusters are the hub, every ManagedCluster and every cluster an
	// installation names, sorted: each gets every gauge, 0 included.
	Clusters  []string
	ByState   map[Key]int     // (state, cluster)
	Waiting   map[Key]int     // (gate, cluster)
	Drifted   map[string]int  // by cluster
	Reachable map[string]bool // by ManagedCluster
}

// Count computes the gauges' values from installations and clusters.
func Count(insts []v1alpha1.ExtensionInstallation, clusters []v1alpha1.ManagedCluster) Counts {
	c := Counts{ByState: map[Key]int{}, Waiting: map[Key]int{}, Drifted: map[string]int{}, Reachable: map[string]bool{}}
	known := map[string]bool{HubCluster: true}
	for i := range clusters {
		mc := &clusters[i]
		known[mc.Name] = true
		c.Reachable[mc.Name] = meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReachable)
	}
	for i := range insts {
		inst := &insts[i]
		cl := ClusterLabel(inst.Spec.Cluster)
		known[cl] = true
		c.ByState[Key{State(inst), cl}]++
		approval, hooks := news.Waiting(inst)
		if approval {
			c.Waiting[Key{GateApproval, cl}]++
		}
		if hooks {
			c.Waiting[Key{GateHooks, cl}]++
		}
		if len(inst.Status.Drifted) > 0 {
			c.Drifted[cl]++
		}
	}
	for cl := range known {
		c.Clusters = append(c.Clusters, cl)
	}
	sort.Strings(c.Clusters)
	return c
}

// State is the state label of an installation: Deleting and Suspended
// come first, then the kstatus conditions of the current generation —
// Ready True is Ready, Stalled True is Stalled, anything else (including
// an installation not reconciled since its spec changed) Reconciling.
func State(inst *v1alpha1.ExtensionInstallation) string {
	switch {
	case !inst.DeletionTimestamp.IsZero():
		return StateDeleting
	case inst.Spec.Suspend:
		return StateSuspended
	case conditionTrue(inst, v1alpha1.ConditionReady):
		return StateReady
	case conditionTrue(inst, v1alpha1.ConditionStalled):
		return StateStalled
	}
	return StateReconciling
}

func conditionTrue(inst *v1alpha1.ExtensionInstallation, t string) bool {
	c := meta.FindStatusCondition(inst.Status.Conditions, t)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == inst.Generation
}
