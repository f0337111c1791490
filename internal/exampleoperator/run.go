package exampleoperator

import (
	"cmp"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Options configure one operator process.
type Options struct {
	// Version is the operator version to behave as (semver, e.g. 0.2.0).
	Version string
	// WatchNamespaces are the namespaces whose Banners it serves; empty
	// means all namespaces.
	WatchNamespaces []string
	// LeaderElection makes replicas (and, during an upgrade, the old and
	// the new version) take turns through a Lease in
	// LeaderElectionNamespace.
	LeaderElection          bool
	LeaderElectionNamespace string
	// MetricsAddr and HealthAddr are the metrics and probe endpoints; "0"
	// or empty turns them off.
	MetricsAddr, HealthAddr string
	// WebhookHost, WebhookPort and WebhookCertDir are where versions from
	// 0.4.0 serve their webhooks (HTTPS) and read tls.crt and tls.key;
	// defaults: all addresses, WebhookPort, WebhookCertDir. Earlier
	// versions serve none.
	WebhookHost    string
	WebhookPort    int
	WebhookCertDir string
}

// NewManager returns a manager running the Banner controller with o: its
// cache holds Banners and ConfigMaps of the watched namespaces only, so
// the operator needs no more access than OLM's install modes grant. From
// version 0.4.0 it also serves the webhooks of webhooks.go. An
// error means bad options (a version that is not semver, leader election
// without a namespace) or a configuration the manager refuses.
func NewManager(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if o.LeaderElection && o.LeaderElectionNamespace == "" {
		return nil, errors.New("leader election needs a namespace for its Lease: set --leader-election-namespace or POD_NAMESPACE")
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	var namespaces map[string]cache.Config
	if len(o.WatchNamespaces) > 0 {
		namespaces = map[string]cache.Config{}
		for _, ns := range o.WatchNamespaces {
			namespaces[ns] = cache.Config{}
		}
	}
	b, err := behaviourOf(o.Version)
	if err != nil {
		return nil, err
	}
	var hooks webhook.Server
	if b.webhooks {
		hooks = webhook.NewServer(webhook.Options{
			Host:    o.WebhookHost,
			Port:    cmp.Or(o.WebhookPort, WebhookPort),
			CertDir: cmp.Or(o.WebhookCertDir, WebhookCertDir),
		})
		hooks.Register(ValidatingPath, &webhook.Admission{Handler: admission.HandlerFunc(validateBanner)})
		hooks.Register(ConversionPath, conversionHandler{})
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer:                 hooks,
		Scheme:                        scheme,
		Cache:                         cache.Options{DefaultNamespaces: namespaces},
		Metrics:                       metricsserver.Options{BindAddress: offIfEmpty(o.MetricsAddr)},
		HealthProbeBindAddress:        offIfEmpty(o.HealthAddr),
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              "example-operator.example.annex.dev",
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		// Tests run one operator version after another in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	if b.webhooks {
		// Added to the manager, which starts it with the controller.
		mgr.GetWebhookServer()
	}
	r, err := NewReconciler(mgr.GetClient(), mgr.GetEventRecorder(Name), o.Version)
	if err != nil {
		return nil, err
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if o.HealthAddr != "" && o.HealthAddr != "0" {
		if err := errors.Join(mgr.AddHealthzCheck("ping", healthz.Ping), mgr.AddReadyzCheck("ping", healthz.Ping)); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

func offIfEmpty(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}
