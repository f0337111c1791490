package catalog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
)

// fixedFetcher serves given bytes by URL and counts calls.
type fixedFetcher struct {
	data  map[string][]byte
	calls atomic.Int32
}

func (f *fixedFetcher) FetchArtifact(_ context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	f.calls.Add(1)
	return f.data[src.URL], nil
}

func TestDiskCache(t *testing.T) {
	blob := func(i int) []byte { return []byte(fmt.Sprintf("%0100d", i)) }
	next := &fixedFetcher{data: map[string][]byte{}}
	var srcs []v1alpha1.ArtifactSource
	for i := range 3 {
		u := fmt.Sprintf("https://x/%d.tgz", i)
		next.data[u] = blob(i)
		srcs = append(srcs, v1alpha1.ArtifactSource{URL: u, Digest: catalog.Digest(blob(i))})
	}
	dir := t.TempDir()
	cache := &catalog.DiskCache{Next: next, Dir: dir, MaxBytes: 250}
	ctx := context.Background()

	// Concurrent requests for one digest share one download.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if data, err := cache.FetchArtifact(ctx, srcs[0]); err != nil || string(data) != string(blob(0)) {
				t.Errorf("FetchArtifact = %q, %v", data, err)
			}
		})
	}
	wg.Wait()
	if n := next.calls.Load(); n != 1 {
		t.Fatalf("%d downloads of one digest, want 1", n)
	}

	// A restarted manager finds it on disk.
	again := &catalog.DiskCache{Next: next, Dir: dir, MaxBytes: 250}
	if _, err := again.FetchArtifact(ctx, srcs[0]); err != nil || next.calls.Load() != 1 {
		t.Fatalf("after restart: %v, %d downloads", err, next.calls.Load())
	}

	// Beyond 250 bytes the least recently used goes: 0 was used last, 1 is evicted.
	for _, i := range []int{1, 0, 2} {
		if _, err := again.FetchArtifact(ctx, srcs[i]); err != nil {
			t.Fatal(err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, "artifacts", "sha256", "*"))
	if len(left) != 2 {
		t.Fatalf("%d artifacts on disk, want 2", len(left))
	}
	if _, err := os.Stat(filepath.Join(dir, "artifacts", "sha256", srcs[1].Digest[len("sha256:"):])); !os.IsNotExist(err) {
		t.Fatalf("the least recently used artifact is still there: %v", err)
	}

	// A damaged file is not served: it is fetched again.
	p := filepath.Join(dir, "artifacts", "sha256", srcs[2].Digest[len("sha256:"):])
	if err := os.WriteFile(p, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := next.calls.Load()
	if data, err := again.FetchArtifact(ctx, srcs[2]); err != nil || string(data) != string(blob(2)) || next.calls.Load() != before+1 {
		t.Fatalf("damaged entry: %q, %v", data, err)
	}
}
