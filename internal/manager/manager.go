// Package manager assembles the Annex manager: the scheme, the controllers
// and the implementations they use. `annex manager`, `annex dev` and the
// integration tests all build the manager here, so they run the same code.
package manager

import (
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/builtin"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/cluster"
	catalogcontroller "github.com/annex-platform/annex/internal/controller/catalog"
	extensioncontroller "github.com/annex-platform/annex/internal/controller/extension"
	hookcontroller "github.com/annex-platform/annex/internal/controller/hook"
	"github.com/annex-platform/annex/internal/controller/imagepolicy"
	"github.com/annex-platform/annex/internal/controller/installation"
	"github.com/annex-platform/annex/internal/controller/managedcluster"
	"github.com/annex-platform/annex/internal/controller/profile"
	"github.com/annex-platform/annex/internal/hookrequest"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/scheme"
	"github.com/annex-platform/annex/internal/shard"
)

// Options configure the manager.
type Options struct {
	// MetricsAddr serves Prometheus metrics; "0" turns them off.
	MetricsAddr string
	// HealthAddr serves /healthz and /readyz; "" or "0" turns them off.
	HealthAddr string
	// PprofAddr serves Go's /debug/pprof profiles (heap, goroutines, CPU);
	// "" or "0" turns them off.
	PprofAddr string
	// LeaderElection makes only one replica reconcile at a time.
	LeaderElection bool
	// LeaderElectionNamespace holds the lease (default: the in-cluster
	// namespace).
	LeaderElectionNamespace string
	// CacheDir holds fetched artifacts (content-addressed, bounded) and the
	// last good content of each catalog (default: the user cache dir/annex).
	CacheDir string
	// HTTPClient fetches catalogs and artifacts (default: a client with a
	// 60 s timeout).
	HTTPClient *http.Client
	// HealthPollInterval is how often installations waiting for health are
	// re-read (default 2s).
	HealthPollInterval time.Duration
	// Workers is how many installations reconcile at once (default
	// installation.DefaultWorkers).
	Workers int
	// HookAnswerWait is how long the reconcile that asks an installation's
	// hooks waits for their answers (default
	// hookrequest.DefaultAnswerWait; negative: it does not wait).
	HookAnswerWait time.Duration
	// CertificateClock is the time operators' webhook certificates are
	// issued and renewed at; nil is the wall clock. Tests move it ahead.
	CertificateClock func() time.Time
	// SeveralPerProcess lets a process build more than one manager, as
	// tests do: controller-runtime refuses a second controller of the same
	// name in one process, whose metrics would collide.
	SeveralPerProcess bool
	// ClusterVersionInterval is how often each cluster's Kubernetes version
	// is observed (a change re-resolves its installations) and each
	// ManagedCluster is probed (default 30s).
	ClusterVersionInterval time.Duration
	// DefaultServiceAccount is the ServiceAccount of their own namespace
	// that installations naming none act as (multi-tenant mode; see
	// installation.Reconciler).
	DefaultServiceAccount string
	// RestrictTargets keeps installations in their own namespace on the
	// hub unless the hub admin grants more on the namespace.
	RestrictTargets bool
	// DefaultVerifyPolicy names the ConfigMap, "<namespace>/<name>",
	// whose data key verify.yaml is the cluster-wide default signature
	// policy: it covers every Catalog without spec.verify, and its
	// Enforce cannot be loosened by a catalog's Audit. Empty: no default.
	DefaultVerifyPolicy string
	// Shard is the shard of managers this one belongs to (default
	// shard.Default). It serves only the ManagedClusters labelled
	// annex.dev/shard=<Shard> (the default shard: the unlabelled ones and
	// the hub) and their installations, and elects its leader with its
	// own Lease (shard.LeaseName). Only the default shard runs the hub's
	// own controllers (catalogs, extensions, profiles, hooks).
	Shard string
}

// cacheSyncTimeout is how long a controller waits for its caches' first
// list before the manager gives up.
const cacheSyncTimeout = 15 * time.Minute

// New builds the manager with every Annex controller registered. Its
// clients have no client-side rate limit unless cfg sets one
// (cluster.ClientConfig).
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if o.Shard == "" {
		o.Shard = shard.Default
	}
	if err := shard.Validate(o.Shard); err != nil {
		return nil, err
	}
	hubShard := o.Shard == shard.Default
	cfg = cluster.ClientConfig(cfg)
	healthAddr := o.HealthAddr
	if healthAddr == "" {
		healthAddr = "0"
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme.New(),
		// Nothing reads the managed fields of cached objects; keeping them
		// would double the memory and the cost of every copy.
		Cache:                   cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  healthAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        shard.LeaseName(o.Shard),
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// A hub of a thousand clusters holds tens of thousands of objects
		// (installations, their revision records, Events): their first
		// list, on a busy 2-core hub, took longer than controller-runtime's
		// default of 2 minutes, and the restarted manager gave up and
		// exited (make bench-fleet CLUSTERS=1000). A slow start is better
		// than none.
		Controller: config.Controller{SkipNameValidation: &o.SeveralPerProcess, CacheSyncTimeout: cacheSyncTimeout},
	})
	if err != nil {
		return nil, err
	}
	httpClient := o.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 60 * time.Second}
	}
	lookup := catalog.KubeLookup{Reader: mgr.GetAPIReader()}
	fetcher := &catalog.Fetcher{Client: httpClient, Builtin: builtin.Archive, Lookup: lookup}
	cacheDir := o.CacheDir // artifacts and the last good content of each catalog
	if cacheDir == "" {
		cacheDir = catalog.DefaultCacheDir()
	}
	origin := sources.Artifacts{Fetcher: fetcher}
	artifacts := &catalog.MemoryCache{Next: &catalog.DiskCache{Next: origin, Dir: cacheDir}}

	recorder := mgr.GetEventRecorder("annex")
	// One verifier, so that a digest verified once is verified for both
	// the catalogs' images and the installations' artifacts.
	verifier := newVerifier(mgr, o, fetcher, lookup, artifacts)
	if hubShard {
		if err := addHubControllers(mgr, o, fetcher, lookup, cacheDir, artifacts, recorder, verifier); err != nil {
			return nil, err
		}
	}
	// Each shard writes only to the clusters it serves: the fence admits
	// its installations' reconciles, and the ManagedCluster controller
	// claims and hands over clusters through it.
	fence := &shard.Fence{Shard: o.Shard, Clusters: mgr.GetClient()}
	clusters := &cluster.Registry{Local: cfg, Reader: mgr.GetAPIReader(), VersionTTL: o.ClusterVersionInterval}
	clusterEvents := make(chan event.GenericEvent)
	versions := &cluster.VersionWatcher{
		Registry: clusters, Reader: mgr.GetClient(), Interval: o.ClusterVersionInterval, Events: clusterEvents, Serves: fence.Serves,
	}
	if err := mgr.Add(versions); err != nil {
		return nil, err
	}
	// The installation's reconcile asks its hooks; their answers wake it
	// through watches on its controller.
	hooks := &hookrequest.Asker{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Cache: mgr.GetCache(), AnswerWait: o.HookAnswerWait}
	if err := (&installation.Reconciler{
		Client:                mgr.GetClient(),
		Reader:                mgr.GetAPIReader(),
		Resolver:              &indexedResolver{},
		Engines:               engines(installationFetcher{artifacts, origin}),
		Verifier:              verifier,
		Clusters:              installationClusters{clusters},
		Events:                recorder,
		ClusterEvents:         clusterEvents,
		HealthPollInterval:    o.HealthPollInterval,
		Workers:               o.Workers,
		Hooks:                 hooks,
		DefaultServiceAccount: o.DefaultServiceAccount,
		RestrictTargets:       o.RestrictTargets,
		Fence:                 fence,
		CertificateClock:      o.CertificateClock,
	}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := (&managedcluster.Reconciler{
		Client: mgr.GetClient(), Events: recorder, Clusters: clusters, ProbeInterval: o.ClusterVersionInterval, Versions: versions,
		Shard: o.Shard, Fence: fence, Leaders: &shard.Leases{Reader: mgr.GetAPIReader(), Namespace: leaseNamespace(o)},
	}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if healthAddr != "0" {
		if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
		if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

// addHubControllers adds the controllers of the hub's own objects, which
// run in the default shard only: catalogs, extensions, profiles and their
// rollouts, hooks and the image-policy hook, and the fleet's gauges.
func addHubControllers(mgr ctrl.Manager, o Options, fetcher *catalog.Fetcher, lookup catalog.KubeLookup, cacheDir string,
	artifacts *catalog.MemoryCache, recorder events.EventRecorder, verifier *sources.Verifier) error {
	// The gauges of installations and clusters read the cache at scrape
	// time; one shard reports them for the whole hub.
	metrics.ReadFrom(mgr.GetCache())
	if err := (&catalogcontroller.Reconciler{
		Client:  mgr.GetClient(),
		Events:  recorder,
		Sources: catalogSources{&sources.Catalogs{Fetcher: fetcher, Builtin: builtin.Index, Lookup: lookup, CacheDir: cacheDir, VerifyImage: verifier.VerifyCatalogImage}},
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	// Values schemas and values.yaml are read when someone asks for them,
	// through the same cache as the installations' charts.
	if err := (&extensioncontroller.Reconciler{Client: mgr.GetClient(), Artifacts: artifacts}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&profile.Reconciler{Client: mgr.GetClient(), Events: recorder}).SetupWithManager(mgr); err != nil {
		return err
	}
	hubDiscovery, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	if err := (&hookcontroller.Reconciler{Client: mgr.GetClient(), Discovery: hubDiscovery, Events: recorder}).SetupWithManager(mgr); err != nil {
		return err
	}
	// The image-policy hook of the built-in catalog answers in the manager,
	// so that it works wherever Annex runs, annex dev included.
	return (&imagepolicy.Reconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Events: recorder}).SetupWithManager(mgr)
}

// leaseNamespace is where the shards' Leases are: the manager's own
// leader-election namespace, which every shard must share (each release
// of the chart per shard in one namespace). Out of a cluster without
// --leader-election-namespace it is unknown, and no shard is ever taken
// over.
func leaseNamespace(o Options) string {
	if o.LeaderElectionNamespace != "" {
		return o.LeaderElectionNamespace
	}
	data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// catalogSources gives the catalog controller every source kind and the
// merge of their content.
type catalogSources struct{ *sources.Catalogs }

func (catalogSources) Merge(indexes []catalog.CatalogIndex) map[string]v1alpha1.ExtensionSpec {
	return catalog.Merge(indexes)
}
