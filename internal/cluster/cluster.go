// Package cluster gives controllers access to the clusters they install
// into: the cluster Annex runs in, and ManagedClusters reached through their
// kubeconfig Secrets. It keeps one applier and one discovery client per
// cluster and observes each cluster's Kubernetes version.
package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/apply"
)

// ClientConfig returns the configuration every Annex client of a cluster
// is built from: a copy of cfg without client-go's client-side rate limit
// (5 requests per second) unless cfg sets one, as controller-runtime's
// GetConfig does: the API server's priority and fairness protects it.
// `annex manager`, `annex dev`, the tests and the ManagedCluster clients
// all go through it, so they behave alike.
func ClientConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
	return cfg
}

// Registry keeps one Target per cluster, rebuilt when its kubeconfig
// Secret changes.
type Registry struct {
	// Local is the cluster Annex runs in (spec.cluster "").
	Local *rest.Config
	// Reader reads ManagedClusters and their kubeconfig Secrets.
	Reader client.Reader
	// VersionTTL is how long an observed Kubernetes version is reused
	// (default 30s).
	VersionTTL time.Duration
	// Recheck is how long a cluster's clients are reused before its
	// ManagedCluster and kubeconfig Secret are read again (default
	// DefaultRecheck; negative: read them on every Target). Whoever
	// watches those objects calls Forget when they change, so this only
	// bounds how long a missed change goes unseen.
	Recheck time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	targets map[string]*Target
}

// DefaultRecheck is Registry.Recheck's default. Every installation's
// reconcile asks for its cluster's Target: reading the ManagedCluster and
// its Secret from the API server each time cost the hub two requests per
// reconcile (most of its reads in a fleet-wide upgrade).
const DefaultRecheck = 5 * time.Minute

// Target returns the cluster named name; "" is the local cluster. Its
// clients are built from the ManagedCluster's kubeconfig Secret, and
// reused until Forget or Recheck.
func (r *Registry) Target(ctx context.Context, name string) (*Target, error) {
	now := r.now()
	r.mu.Lock()
	t, ok := r.targets[name]
	fresh := ok && now.Sub(t.checkedAt) < r.recheck()
	r.mu.Unlock()
	if fresh {
		return t, nil
	}
	cfg, fingerprint, err := r.configFor(ctx, name)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.targets[name]; ok && t.fingerprint == fingerprint {
		t.checkedAt = now
		return t, nil
	}
	t, err = newTarget(cfg, fingerprint, r.ttl())
	if err != nil {
		return nil, err
	}
	t.checkedAt = now
	if r.targets == nil {
		r.targets = map[string]*Target{}
	}
	r.targets[name] = t
	return t, nil
}

func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Registry) recheck() time.Duration {
	if r.Recheck == 0 {
		return DefaultRecheck
	}
	return r.Recheck
}

func (r *Registry) ttl() time.Duration {
	if r.VersionTTL > 0 {
		return r.VersionTTL
	}
	return 30 * time.Second
}

// configFor returns the REST config of a cluster and a fingerprint that
// changes when its kubeconfig does.
func (r *Registry) configFor(ctx context.Context, name string) (*rest.Config, string, error) {
	if name == "" {
		return r.Local, "local", nil
	}
	mc := &v1alpha1.ManagedCluster{}
	if err := r.Reader.Get(ctx, types.NamespacedName{Name: name}, mc); err != nil {
		return nil, "", fmt.Errorf("ManagedCluster %q: %w", name, err)
	}
	ref := mc.Spec.KubeconfigSecretRef
	key := ref.Key
	if key == "" {
		key = "kubeconfig"
	}
	sec := &corev1.Secret{}
	if err := r.Reader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, sec); err != nil {
		return nil, "", fmt.Errorf("ManagedCluster %q spec.kubeconfigSecretRef: Secret %s/%s: %w", name, ref.Namespace, ref.Name, err)
	}
	data, ok := sec.Data[key]
	if !ok {
		return nil, "", fmt.Errorf("ManagedCluster %q spec.kubeconfigSecretRef: Secret %s/%s has no key %q", name, ref.Namespace, ref.Name, key)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, "", fmt.Errorf("ManagedCluster %q: key %q of Secret %s/%s is not a valid kubeconfig: %w", name, key, ref.Namespace, ref.Name, err)
	}
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		// A user cluster is not the hub: bounded, far above what a
		// reconcile needs (client-go's 5 per second throttled a fleet).
		cfg.QPS, cfg.Burst = ManagedClusterQPS, 2*ManagedClusterQPS
	}
	return ClientConfig(cfg), string(sec.UID) + "/" + sec.ResourceVersion, nil
}

// Target is one cluster: its applier, discovery, and what was observed.
type Target struct {
	fingerprint string
	checkedAt   time.Time // when fingerprint was last compared with the Secret (guarded by Registry.mu)
	config      *rest.Config
	applier     *apply.Applier
	discovery   discovery.DiscoveryInterface
	ttl         time.Duration

	impersonating map[string]*apply.Applier // by user name, see ApplierAs

	mu        sync.Mutex
	version   string
	versionAt time.Time
	apis      []string
	apisAt    time.Time
}

// apiVersionsTTL is how long a cluster's API versions are reused: a
// discovery of every group costs a request per group version.
const apiVersionsTTL = 2 * time.Minute

// APIVersions lists the cluster's API versions as Helm's
// .Capabilities.APIVersions does: "group/version" for each served group
// version and "group/version/Kind" for each of its kinds. Groups whose
// discovery fails (an aggregated API that is down) are left out, as Helm
// does.
func (t *Target) APIVersions(ctx context.Context) ([]string, error) {
	t.mu.Lock()
	if t.apis != nil && time.Since(t.apisAt) < apiVersionsTTL {
		apis := t.apis
		t.mu.Unlock()
		return apis, nil
	}
	t.mu.Unlock()
	_, lists, err := t.discovery.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	seen := map[string]bool{}
	var apis []string
	add := func(v string) {
		if !seen[v] {
			seen[v] = true
			apis = append(apis, v)
		}
	}
	for _, l := range lists {
		add(l.GroupVersion)
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") { // subresources are not kinds
				add(l.GroupVersion + "/" + r.Kind)
			}
		}
	}
	sort.Strings(apis)
	t.mu.Lock()
	t.apis, t.apisAt = apis, time.Now()
	t.mu.Unlock()
	return apis, nil
}

func newTarget(cfg *rest.Config, fingerprint string, ttl time.Duration) (*Target, error) {
	a, err := apply.New(cfg)
	if err != nil {
		return nil, err
	}
	// A cluster that does not answer must not hold a reconcile for long.
	dcfg := rest.CopyConfig(cfg)
	if dcfg.Timeout == 0 {
		dcfg.Timeout = discoveryTimeout
	}
	dc, err := discovery.NewDiscoveryClientForConfig(dcfg)
	if err != nil {
		return nil, err
	}
	return &Target{fingerprint: fingerprint, config: cfg, applier: a, discovery: dc, ttl: ttl}, nil
}

// maxImpersonated bounds how many impersonating appliers a Target keeps;
// past it they are built anew (their REST mapper is shared, so that is
// cheap).
const maxImpersonated = 512

// ApplierAs returns an applier that acts as user: every request it sends
// impersonates user (the cluster's own identity needs the impersonate
// verb on it), so the API server allows exactly what user may do. It
// shares the REST mapper of the Target's applier.
func (t *Target) ApplierAs(user string) (*apply.Applier, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a, ok := t.impersonating[user]; ok {
		return a, nil
	}
	cfg := rest.CopyConfig(t.config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	a, err := apply.NewWithMapper(cfg, t.applier.Mapper)
	if err != nil {
		return nil, err
	}
	if t.impersonating == nil || len(t.impersonating) >= maxImpersonated {
		t.impersonating = map[string]*apply.Applier{}
	}
	t.impersonating[user] = a
	return a, nil
}

// ManagedClusterQPS is the client-side rate limit of the clients of a
// ManagedCluster whose kubeconfig sets none (burst twice as much).
const ManagedClusterQPS = 200

// discoveryTimeout bounds one version read of a cluster.
const discoveryTimeout = 15 * time.Second

// Probe reads the named cluster's Kubernetes version now (installations
// see it too) and counts its nodes. Errors say why the cluster cannot be
// reached.
func (r *Registry) Probe(ctx context.Context, name string) (version string, nodes int, err error) {
	t, err := r.Target(ctx, name)
	if err != nil {
		return "", 0, err
	}
	if version, err = t.observe(); err != nil {
		return "", 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, discoveryTimeout)
	defer cancel()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := t.applier.Client.List(ctx, list); err != nil {
		return version, 0, fmt.Errorf("listing nodes: %w", err)
	}
	return version, len(list.Items), nil
}

// Forget drops the clients of the named cluster; the next Target builds
// them again.
func (r *Registry) Forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.targets, name)
}

// ObserveVersion reads the Kubernetes version of the named cluster from
// discovery now, bypassing the TTL, and remembers it for KubeVersion.
func (r *Registry) ObserveVersion(ctx context.Context, name string) (string, error) {
	t, err := r.Target(ctx, name)
	if err != nil {
		return "", err
	}
	return t.observe()
}

// KubeVersion returns the cluster's gitVersion, observed through discovery
// and reused for the TTL.
func (t *Target) KubeVersion(ctx context.Context) (string, error) {
	t.mu.Lock()
	fresh := t.version != "" && time.Since(t.versionAt) < t.ttl
	version := t.version
	t.mu.Unlock()
	if fresh {
		return version, nil
	}
	return t.observe()
}

func (t *Target) observe() (string, error) {
	info, err := t.discovery.ServerVersion()
	if err != nil {
		return "", err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.version, t.versionAt = info.GitVersion, time.Now()
	return t.version, nil
}

// Applier is the cluster's applier.
func (t *Target) Applier() *apply.Applier { return t.applier }

// NamespaceExists reads the namespace's metadata.
func (t *Target) NamespaceExists(ctx context.Context, name string) (bool, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err := t.applier.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
