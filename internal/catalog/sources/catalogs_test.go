package sources_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/sources"
)

// recorder is a TLS server that records the Authorization header of each
// request by path.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	auth map[string]string
}

func newRecorder(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *recorder {
	rec := &recorder{auth: map[string]string{}}
	rec.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.auth[r.URL.Path] = r.Header.Get("Authorization")
		rec.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) authOf(path string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.auth[path]
}

func caPEM(s *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// TestCredentialsStayWithTheirHost checks Helm's CVE-2021-32690 case: a
// private repository whose index and chart redirect to another host. The
// credentials reach the repository's host and never the other one.
func TestCredentialsStayWithTheirHost(t *testing.T) {
	archive, err := catalog.ChartArchive("demo", map[string][]byte{"Chart.yaml": []byte(catalogtest.ChartYAML)})
	if err != nil {
		t.Fatal(err)
	}
	other := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(archive) })
	repo := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/index.yaml":
			_, _ = w.Write([]byte("apiVersion: v1\nentries:\n  demo:\n  - name: demo\n    version: 1.0.0\n    urls: [" + other.URL + "/direct.tgz]\n"))
		case "/demo.tgz":
			http.Redirect(w, r, other.URL+"/redirected.tgz", http.StatusFound)
		}
	})
	// Both servers share httptest's certificate; the repository's CA comes
	// from the Secret, not from a client configured by the test.
	cat := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "private"}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{
		Helm: &v1alpha1.HelmSource{URL: repo.URL, SecretRef: &v1alpha1.SecretReference{Namespace: "ns", Name: "creds"}},
	}}}
	look := catalogtest.Lookup{
		Catalogs: map[string]*v1alpha1.Catalog{"private": cat},
		Secrets:  map[string]map[string][]byte{"ns/creds": {"username": []byte("u"), "password": []byte("p"), "ca.crt": caPEM(repo.Server)}},
	}
	f := &catalog.Fetcher{Lookup: look, Client: &http.Client{Transport: otherTrust(other.Server)}}
	catalogs := &sources.Catalogs{Fetcher: f, Lookup: look}
	artifacts := sources.Artifacts{Fetcher: f}
	index, err := catalogs.Index(context.Background(), cat)
	if err != nil {
		t.Fatalf("Index: %v", err)
	}
	if got := repo.authOf("/index.yaml"); !strings.HasPrefix(got, "Basic ") {
		t.Fatalf("index.yaml was fetched with Authorization %q, want basic auth", got)
	}
	// A chart URL on another host: fetched without credentials.
	if _, err := artifacts.FetchArtifact(context.Background(), index.Packages[0].Spec.Versions[0].Source); err != nil {
		t.Fatalf("FetchArtifact: %v", err)
	}
	// A redirect to another host: the credentials stop at the first hop.
	if _, err := artifacts.FetchArtifact(context.Background(), v1alpha1.ArtifactSource{Catalog: "private", URL: repo.URL + "/demo.tgz"}); err != nil {
		t.Fatalf("FetchArtifact through a redirect: %v", err)
	}
	if got := repo.authOf("/demo.tgz"); got == "" {
		t.Fatal("the repository's own chart URL got no credentials")
	}
	for _, p := range []string{"/direct.tgz", "/redirected.tgz"} {
		if got := other.authOf(p); got != "" {
			t.Fatalf("the other host received Authorization %q on %s", got, p)
		}
	}
}

// otherTrust trusts s's certificate for the base client (the "other host"
// in the test is a stranger to the repository's Secret).
func otherTrust(s *httptest.Server) http.RoundTripper {
	return s.Client().Transport.(*http.Transport).Clone()
}

// TestIndexConditionalAndStale: an unchanged index is answered 304 and
// reused; an unreachable repository serves the last good content, marked
// stale.
func TestIndexConditionalAndStale(t *testing.T) {
	var mu sync.Mutex
	down, full := false, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full++
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write([]byte("apiVersion: v1\nentries:\n  demo:\n  - name: demo\n    version: 1.0.0\n    urls: [demo.tgz]\n"))
	}))
	defer srv.Close()
	cat := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: srv.URL}}}}
	dir := t.TempDir()
	s := &sources.Catalogs{Fetcher: &catalog.Fetcher{}, CacheDir: dir}
	first, err := s.Index(context.Background(), cat)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Index(context.Background(), cat)
	if err != nil || second.Digest != first.Digest || full != 1 {
		t.Fatalf("second sync: %v, digest %s vs %s, %d full downloads; want a 304 reuse", err, second.Digest, first.Digest, full)
	}
	mu.Lock()
	down = true
	mu.Unlock()
	// A new Catalogs (a restarted manager) still has the content on disk.
	restarted := &sources.Catalogs{Fetcher: &catalog.Fetcher{}, CacheDir: dir}
	stale, err := restarted.Index(context.Background(), cat)
	if err != nil || stale.Stale == nil || stale.Digest != first.Digest || stale.FetchedAt.IsZero() {
		t.Fatalf("outage: %v, %+v; want the last good content marked stale", err, stale)
	}
	if !strings.Contains(stale.Stale.Error(), "503") {
		t.Fatalf("Stale = %v, want the 503", stale.Stale)
	}
}
