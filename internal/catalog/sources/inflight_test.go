package sources_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/verify"
)

// Installations that verify the same artifact at once (a profile rolling
// a version out to many clusters) share one check: one read of its
// signature, every one of them verified.
func TestVerifyJoinsConcurrentChecks(t *testing.T) {
	var signatureReads atomic.Int32
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/sha256-") && strings.HasSuffix(r.URL.Path, ".sig") {
			signatureReads.Add(1)
			time.Sleep(300 * time.Millisecond) // a slow registry: the others arrive while it answers
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	destination := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/packages"
	alice := newSigningKey(t)
	signed := pushDemo(t, destination, "1.0.0", "a", alice)
	signatureReads.Store(0)

	lookup := catalogtest.Lookup{Catalogs: map[string]*v1alpha1.Catalog{
		"alice": {Spec: v1alpha1.CatalogSpec{Verify: cosignPolicy(v1alpha1.VerificationEnforce, v1alpha1.CosignKey{Name: "alice", PublicKey: string(alice.public)})}},
	}}
	lookup.Catalogs["alice"].Name = "alice"
	v := &sources.Verifier{Fetcher: &catalog.Fetcher{Lookup: lookup}, Lookup: lookup, Cache: &verify.Cache{}}

	const n = 16
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([]*v1alpha1.ArtifactVerification, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = v.Verify(context.Background(), "demo-pkg 1.0.0", v1alpha1.ArtifactSource{Catalog: "alice", URL: signed}, "")
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || results[i] == nil || !results[i].Verified || !strings.Contains(results[i].Identity, `key "alice"`) {
			t.Fatalf("check %d: %+v, %v", i, results[i], errs[i])
		}
	}
	if got := signatureReads.Load(); got != 1 {
		t.Errorf("%d checks at once read the signature %d times, want once", n, got)
	}
}
