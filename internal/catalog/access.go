package catalog

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Keys of a catalog's credentials Secret.
const (
	SecretUsername = "username"
	SecretPassword = "password"
	SecretToken    = "token"
	SecretCA       = "ca.crt"
	SecretCert     = "tls.crt"
	SecretKey      = "tls.key"
)

// CatalogLookup reads Catalogs and their Secrets.
type CatalogLookup interface {
	// Catalog returns the named Catalog, or nil when it does not exist.
	Catalog(ctx context.Context, name string) (*v1alpha1.Catalog, error)
	// Secret returns the data of the referenced Secret.
	Secret(ctx context.Context, ref v1alpha1.SecretReference) (map[string][]byte, error)
}

// KubeLookup is a CatalogLookup backed by an API reader.
type KubeLookup struct {
	Reader client.Reader
}

// Catalog implements CatalogLookup.
func (k KubeLookup) Catalog(ctx context.Context, name string) (*v1alpha1.Catalog, error) {
	cat := &v1alpha1.Catalog{}
	err := k.Reader.Get(ctx, client.ObjectKey{Name: name}, cat)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cat, err
}

// Secret implements CatalogLookup.
func (k KubeLookup) Secret(ctx context.Context, ref v1alpha1.SecretReference) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := k.Reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, s); err != nil {
		return nil, err
	}
	return s.Data, nil
}

// ConfigMap returns the data of the ConfigMap ns/name (a Notation trust
// store's configMapRef).
func (k KubeLookup) ConfigMap(ctx context.Context, ns, name string) (map[string]string, error) {
	cm := &corev1.ConfigMap{}
	if err := k.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		return nil, err
	}
	return cm.Data, nil
}

// Access is what a private repository or registry needs: credentials and
// TLS settings, all of them for Host only.
type Access struct {
	// Host is the host[:port] the credentials belong to.
	Host string
	// Username and Password are sent as HTTP basic authentication.
	Username, Password string
	// Token is sent as a bearer token.
	Token string
	// CA is a PEM bundle trusted in addition to the system roots.
	CA []byte
	// Cert and Key are a PEM client certificate and key.
	Cert, Key []byte
	// AllowHTTP lets the credentials travel over plain http
	// (spec.source.helm.insecure).
	AllowHTTP bool
}

// hasCredentials reports whether a leaks anything if sent to the wrong host.
func (a *Access) hasCredentials() bool {
	return a != nil && (a.Username != "" || a.Password != "" || a.Token != "" || len(a.Cert) > 0)
}

// key identifies an Access for the client cache.
func (a *Access) key() string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(a.Host), []byte(a.Username), []byte(a.Password), []byte(a.Token), a.CA, a.Cert, a.Key} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// AccessFor reads the credentials a Catalog's spec.source.*.secretRef
// names; nil when it names none. Errors name the Secret and the field.
func AccessFor(ctx context.Context, lookup CatalogLookup, cat *v1alpha1.Catalog) (*Access, error) {
	var ref *v1alpha1.SecretReference
	var rawURL, field string
	switch src := cat.Spec.Source; {
	case src.Helm != nil:
		ref, rawURL, field = src.Helm.SecretRef, src.Helm.URL, "spec.source.helm.secretRef"
	case src.OCI != nil:
		ref, rawURL, field = src.OCI.SecretRef, src.OCI.Repository, "spec.source.oci.secretRef"
	case src.OLM != nil:
		ref, rawURL, field = src.OLM.SecretRef, src.OLM.URL, "spec.source.olm.secretRef"
		if src.OLM.Image != "" {
			rawURL = "oci://" + src.OLM.Image
		}
	}
	if ref == nil {
		return nil, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("catalog %q: URL %q has no host for the credentials of %s", cat.Name, rawURL, field)
	}
	data, err := lookup.Secret(ctx, *ref)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: %s: Secret %s/%s: %w", cat.Name, field, ref.Namespace, ref.Name, err)
	}
	a := &Access{
		Host:     u.Host,
		Username: string(data[SecretUsername]),
		Password: string(data[SecretPassword]),
		Token:    string(data[SecretToken]),
		CA:       data[SecretCA],
		Cert:     data[SecretCert],
		Key:      data[SecretKey],
	}
	if (len(a.Cert) > 0) != (len(a.Key) > 0) {
		return nil, fmt.Errorf("catalog %q: %s: Secret %s/%s has only one of %s and %s; set both for a client certificate", cat.Name, field, ref.Namespace, ref.Name, SecretCert, SecretKey)
	}
	if a.Token != "" && (a.Username != "" || a.Password != "") {
		return nil, fmt.Errorf("catalog %q: %s: Secret %s/%s has both %s and %s/%s; keep one kind of credentials", cat.Name, field, ref.Namespace, ref.Name, SecretToken, SecretUsername, SecretPassword)
	}
	a.AllowHTTP = cat.Spec.Source.Helm != nil && cat.Spec.Source.Helm.Insecure || cat.Spec.Source.OLM != nil && cat.Spec.Source.OLM.Insecure
	if u.Scheme == "http" && a.hasCredentials() && !a.AllowHTTP {
		return nil, fmt.Errorf("catalog %q: %s: credentials are not sent over plain http; use an https:// URL, or set %s", cat.Name, field, strings.Replace(field, "secretRef", "insecure", 1))
	}
	return a, nil
}

// TLSConfig returns the TLS settings of a (its CA and client certificate),
// nil when it has none.
func (a *Access) TLSConfig() (*tls.Config, error) {
	if a == nil || (len(a.CA) == 0 && len(a.Cert) == 0) {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(a.CA) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(a.CA) {
			return nil, fmt.Errorf("%s holds no PEM certificate", SecretCA)
		}
		cfg.RootCAs = pool
	}
	if len(a.Cert) > 0 {
		cert, err := tls.X509KeyPair(a.Cert, a.Key)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", SecretCert, SecretKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// clientCache keeps one *http.Client per distinct Access, so connections
// are reused between syncs.
type clientCache struct {
	mu      sync.Mutex
	clients map[string]*http.Client
}

// ClientFor returns the client to reach u with access: the base client when
// access is nil or for another host (a chart URL may point elsewhere; its
// credentials must not follow), else a client whose transport adds them.
// Clients are kept per Access, so connections are reused between syncs.
func (f *Fetcher) ClientFor(access *Access, u *url.URL) (*http.Client, error) {
	base := f.Client
	if base == nil {
		base = &http.Client{Timeout: 60 * time.Second}
	}
	if access == nil || access.Host != u.Host {
		return base, nil
	}
	key := access.key()
	f.clients.mu.Lock()
	defer f.clients.mu.Unlock()
	if c, ok := f.clients.clients[key]; ok {
		return c, nil
	}
	cfg, err := access.TLSConfig()
	if err != nil {
		return nil, fmt.Errorf("credentials for %s: %w", access.Host, err)
	}
	other := base.Transport
	if other == nil {
		other = http.DefaultTransport
	}
	own := other
	if cfg != nil {
		t, ok := other.(*http.Transport)
		if !ok {
			return nil, errors.New("the fetcher's HTTP client has a custom transport; TLS settings from a Secret need an *http.Transport")
		}
		t = t.Clone()
		t.TLSClientConfig = cfg
		own = t
	}
	c := &http.Client{
		Timeout:   base.Timeout,
		Jar:       nil,
		Transport: &authTransport{access: access, own: own, other: other},
	}
	if f.clients.clients == nil {
		f.clients.clients = map[string]*http.Client{}
	}
	f.clients.clients[key] = c
	return c, nil
}

// authTransport adds credentials to requests for one host, on every hop of
// a redirect chain, and sends requests for any other host (a redirect to a
// CDN, a chart URL on another server) through a transport with neither
// credentials nor client certificate (Helm's CVE-2021-32690). The host
// comparison includes the port.
type authTransport struct {
	access     *Access
	own, other http.RoundTripper
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != t.access.Host {
		if req.Header.Get("Authorization") != "" {
			req = req.Clone(req.Context())
			req.Header.Del("Authorization")
		}
		return t.other.RoundTrip(req)
	}
	// A redirect from https to plain http on the same host must not carry
	// the credentials either, unless the catalog allows plain http.
	if (req.URL.Scheme != "https" && !t.access.AllowHTTP) || (t.access.Username == "" && t.access.Password == "" && t.access.Token == "") {
		return t.own.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	if t.access.Token != "" {
		req.Header.Set("Authorization", "Bearer "+t.access.Token)
	} else {
		req.SetBasicAuth(t.access.Username, t.access.Password)
	}
	return t.own.RoundTrip(req)
}
