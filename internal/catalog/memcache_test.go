package catalog

import (
	"context"
	"fmt"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// countingFetcher returns a fixed 10-byte artifact per URL and counts calls.
type countingFetcher struct{ calls map[string]int }

func (f *countingFetcher) FetchArtifact(_ context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	f.calls[src.URL]++
	return []byte(fmt.Sprintf("%-10s", src.URL[:1])), nil
}

func TestMemoryCache(t *testing.T) {
	next := &countingFetcher{calls: map[string]int{}}
	c := &MemoryCache{Next: next, MaxBytes: 20} // room for two artifacts
	fetch := func(url, digest string) {
		t.Helper()
		if _, err := c.FetchArtifact(context.Background(), v1alpha1.ArtifactSource{URL: url, Digest: digest}); err != nil {
			t.Fatal(err)
		}
	}
	fetch("a", "sha256:a")
	fetch("a", "sha256:a") // cached
	fetch("b", "sha256:b")
	fetch("a", "sha256:a") // cached; a becomes most recently used
	fetch("c", "sha256:c") // evicts b, the least recently used
	fetch("a", "sha256:a") // still cached
	fetch("b", "sha256:b") // fetched again
	fetch("n", "")         // no digest: never cached
	fetch("n", "")
	want := map[string]int{"a": 1, "b": 2, "c": 1, "n": 2}
	for url, n := range want {
		if next.calls[url] != n {
			t.Errorf("%s fetched %d times, want %d", url, next.calls[url], n)
		}
	}
}
