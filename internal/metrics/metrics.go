// Package metrics defines Annex's Prometheus metrics and the small typed
// functions the controllers call to record them. Every metric is
// registered in controller-runtime's registry, so the manager serves them
// on its metrics endpoint next to controller-runtime's own
// (controller_runtime_reconcile_total, workqueue_depth, ...).
//
// Two kinds live here. Durations and counts of things that happen
// (resolve, render, apply, plan, catalog syncs, drift corrections) are
// observed where they happen. Counts of how things are (installations by
// state, installations waiting at a gate, drifted installations,
// reachable clusters) are computed at scrape time from the manager's
// informer cache (see cache.go): they are always consistent with the
// objects' status and cost no API call.
//
// Labels stay bounded: clusters, catalogs, engines, operations, states
// and results — never installation names, which Events and logs carry.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// HubCluster is the cluster label of installations with an empty
// spec.cluster: the hub Annex runs in. Profiles label the hub the same
// way (annex.dev/profile-cluster).
const HubCluster = "hub"

// ClusterLabel is the cluster label value for spec.cluster.
func ClusterLabel(cluster string) string {
	if cluster == "" {
		return HubCluster
	}
	return cluster
}

// Operation is what an apply was for.
type Operation string

const (
	// OpInstall is the first apply of an installation.
	OpInstall Operation = "install"
	// OpUpgrade applies a new version, new values or new content.
	OpUpgrade Operation = "upgrade"
	// OpRollback applies the last healthy revision after failed attempts.
	OpRollback Operation = "rollback"
	// OpDriftCorrection applies the installed revision again over drift.
	OpDriftCorrection Operation = "drift-correction"
)

// names lists every metric this package registers, in definition order.
var names []string

var (
	// resolveDuration (annex_resolve_duration_seconds, histogram): how
	// long the resolver takes to solve every installation on one cluster
	// together, once per reconcile that resolves.
	resolveDuration = register(prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "annex_resolve_duration_seconds",
		Help:    "Time the resolver takes to solve the installations of one cluster together.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9), // 0.5 ms .. 33 s
	}), "annex_resolve_duration_seconds")

	// renderDuration (annex_render_duration_seconds{engine}, histogram):
	// how long an engine takes to turn an artifact and values into the
	// objects or plans to apply; engine is Helm, Package or Bundle.
	renderDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "annex_render_duration_seconds",
		Help:    "Time an engine (Helm, Package, Bundle) takes to render an installation's artifact and values.",
		Buckets: prometheus.ExponentialBuckets(0.005, 3, 9), // 5 ms .. 33 s
	}, []string{"engine"}), "annex_render_duration_seconds")

	// applyDuration (annex_apply_duration_seconds{operation}, histogram):
	// how long one apply of a chart's revision takes, Helm hooks and
	// phases included; operation is install, upgrade, rollback or
	// drift-correction. Packages and bundles apply step by step within
	// their plans: see annex_plan_duration_seconds.
	applyDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "annex_apply_duration_seconds",
		Help:    "Time one apply of a chart's revision takes (install, upgrade, rollback, drift-correction).",
		Buckets: prometheus.ExponentialBuckets(0.01, 3, 10), // 10 ms .. 197 s
	}, []string{"operation"}), "annex_apply_duration_seconds")

	// planDuration (annex_plan_duration_seconds{engine,result}, histogram):
	// how long a plan of a package or bundle ran, from its start to its
	// end across reconciles (waits for health included); result is the
	// plan's final state: COMPLETE, FATAL_ERROR or ABANDONED.
	planDuration = register(prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "annex_plan_duration_seconds",
		Help:    "Time a package's or bundle's plan ran from start to end, by engine and final state.",
		Buckets: prometheus.ExponentialBuckets(0.5, 3, 10), // 0.5 s .. 2.7 h
	}, []string{"engine", "result"}), "annex_plan_duration_seconds")

	// catalogLastSync (annex_catalog_last_sync_timestamp_seconds{catalog},
	// gauge): when the catalog's source was last read successfully, in
	// Unix seconds; time() minus it is the age of the content served.
	catalogLastSync = register(prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "annex_catalog_last_sync_timestamp_seconds",
		Help: "Unix time of the last successful read of the catalog's source.",
	}, []string{"catalog"}), "annex_catalog_last_sync_timestamp_seconds")

	// catalogSyncErrors (annex_catalog_sync_errors_total{catalog},
	// counter): syncs whose source could not be read (the last good
	// content is served meanwhile) or is not supported.
	catalogSyncErrors = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "annex_catalog_sync_errors_total",
		Help: "Catalog syncs that could not read the catalog's source.",
	}, []string{"catalog"}), "annex_catalog_sync_errors_total")

	// driftCorrections (annex_drift_corrections_total{cluster}, counter):
	// applies that restored objects another actor changed or deleted
	// (driftDetection: Enabled).
	driftCorrections = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "annex_drift_corrections_total",
		Help: "Drift corrections: applies that restored objects changed or deleted behind Annex's back.",
	}, []string{"cluster"}), "annex_drift_corrections_total")
)

// register registers c in controller-runtime's registry under name,
// which it records for Names.
func register[C prometheus.Collector](c C, name string) C {
	ctrlmetrics.Registry.MustRegister(c)
	names = append(names, name)
	return c
}

// Names returns the name of every metric Annex registers (histograms
// without their _bucket, _sum and _count suffixes).
func Names() []string {
	return append([]string(nil), names...)
}

// ObserveResolve records one resolution's duration.
func ObserveResolve(d time.Duration) { resolveDuration.Observe(d.Seconds()) }

// ObserveRender records how long engine took to render ("" is Helm, the
// API's default).
func ObserveRender(engine v1alpha1.Engine, d time.Duration) {
	renderDuration.WithLabelValues(engineLabel(engine)).Observe(d.Seconds())
}

// ObserveApply records one apply of a chart's revision.
func ObserveApply(op Operation, d time.Duration) {
	applyDuration.WithLabelValues(string(op)).Observe(d.Seconds())
}

// ObservePlan records a finished plan: its engine, its final state and
// how long it ran. A plan without both times is not recorded.
func ObservePlan(engine v1alpha1.Engine, st v1alpha1.PlanStatus) {
	if st.StartedAt == nil || st.FinishedAt == nil {
		return
	}
	d := st.FinishedAt.Sub(st.StartedAt.Time)
	planDuration.WithLabelValues(engineLabel(engine), string(st.State)).Observe(max(d, 0).Seconds())
}

// CatalogSynced records a successful read of catalog's source at at.
func CatalogSynced(catalog string, at time.Time) {
	catalogLastSync.WithLabelValues(catalog).Set(float64(at.UnixNano()) / 1e9)
	catalogSyncErrors.WithLabelValues(catalog) // the series exists from the first sync, at 0
}

// CatalogSyncFailed counts a sync of catalog that could not read its
// source.
func CatalogSyncFailed(catalog string) { catalogSyncErrors.WithLabelValues(catalog).Inc() }

// ForgetCatalog drops the series of a deleted catalog.
func ForgetCatalog(catalog string) {
	catalogLastSync.DeleteLabelValues(catalog)
	catalogSyncErrors.DeleteLabelValues(catalog)
}

// DriftCorrected counts a drift correction on cluster (spec.cluster; ""
// is the hub).
func DriftCorrected(cluster string) { driftCorrections.WithLabelValues(ClusterLabel(cluster)).Inc() }

func engineLabel(e v1alpha1.Engine) string {
	if e == "" {
		return string(v1alpha1.EngineHelm)
	}
	return string(e)
}
