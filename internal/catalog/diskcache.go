package catalog

import (
	"container/list"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// DefaultDiskCacheBytes bounds a DiskCache whose MaxBytes is zero.
const DefaultDiskCacheBytes int64 = 1 << 30

// DefaultCacheDir is where Annex keeps its caches when no folder is
// configured: <user cache dir>/annex, or <temp dir>/annex-cache when the
// user has no cache folder.
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "annex")
	}
	return filepath.Join(os.TempDir(), "annex-cache")
}

// DiskCache keeps fetched artifacts on disk, content-addressed by digest
// (<Dir>/artifacts/sha256/<hex>), so an artifact is downloaded once per
// digest however many installations, reconciles and restarts use it. Only
// artifacts with a digest are cached; beyond MaxBytes the least recently
// used are removed. Concurrent requests for the same digest share one
// download. It is safe for concurrent use, also by several processes
// sharing Dir (files are written through a rename).
type DiskCache struct {
	// Next fetches what is not cached.
	Next ArtifactFetcher
	// Dir is the cache folder; empty means DefaultCacheDir().
	Dir string
	// MaxBytes bounds the cache; zero means DefaultDiskCacheBytes.
	MaxBytes int64

	mu       sync.Mutex
	loaded   bool
	size     int64
	order    *list.List // front: most recently used
	entries  map[string]*list.Element
	inflight map[string]*inflight
}

type diskEntry struct {
	digest string
	size   int64
}

type inflight struct {
	done chan struct{}
	data []byte
	err  error
}

// FetchArtifact returns the artifact src names, from disk when present and
// intact, else through Next (which verifies the digest) and then stored.
// The returned slice is the caller's.
func (c *DiskCache) FetchArtifact(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	hexDigest, ok := strings.CutPrefix(src.Digest, "sha256:")
	if !ok || len(hexDigest) != 64 || strings.Trim(hexDigest, "0123456789abcdef") != "" {
		return c.Next.FetchArtifact(ctx, src)
	}
	c.mu.Lock()
	c.load()
	if data, ok := c.read(src.Digest); ok {
		c.mu.Unlock()
		return data, nil
	}
	if call, ok := c.inflight[src.Digest]; ok {
		c.mu.Unlock()
		select {
		case <-call.done:
			return call.data, call.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	call := &inflight{done: make(chan struct{})}
	c.inflight[src.Digest] = call
	c.mu.Unlock()

	call.data, call.err = c.Next.FetchArtifact(ctx, src)
	c.mu.Lock()
	if call.err == nil {
		c.put(src.Digest, call.data)
	}
	delete(c.inflight, src.Digest)
	c.mu.Unlock()
	close(call.done)
	return call.data, call.err
}

func (c *DiskCache) dir() string {
	if c.Dir != "" {
		return c.Dir
	}
	return DefaultCacheDir()
}

func (c *DiskCache) path(digest string) string {
	return filepath.Join(c.dir(), "artifacts", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

// load reads what the folder holds, oldest use first. Callers hold c.mu.
func (c *DiskCache) load() {
	if c.loaded {
		return
	}
	c.loaded = true
	c.order, c.entries, c.inflight = list.New(), map[string]*list.Element{}, map[string]*inflight{}
	items, err := os.ReadDir(filepath.Join(c.dir(), "artifacts", "sha256"))
	if err != nil {
		return
	}
	type found struct {
		digest string
		size   int64
		used   time.Time
	}
	var all []found
	for _, it := range items {
		info, err := it.Info()
		if err != nil || !info.Mode().IsRegular() || len(it.Name()) != 64 {
			continue
		}
		all = append(all, found{"sha256:" + it.Name(), info.Size(), info.ModTime()})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.Before(all[j].used) })
	for _, f := range all {
		c.entries[f.digest] = c.order.PushFront(&diskEntry{digest: f.digest, size: f.size})
		c.size += f.size
	}
	c.evict()
}

// read returns a cached artifact if its file is there and intact; a damaged
// or vanished file is forgotten. Callers hold c.mu.
func (c *DiskCache) read(digest string) ([]byte, bool) {
	el, ok := c.entries[digest]
	if !ok {
		return nil, false
	}
	p := c.path(digest)
	data, err := os.ReadFile(p)
	if err != nil || Digest(data) != digest {
		c.remove(el)
		return nil, false
	}
	c.order.MoveToFront(el)
	now := time.Now()
	_ = os.Chtimes(p, now, now) // the use order survives a restart
	return data, true
}

// put stores data and evicts beyond the limit. Callers hold c.mu.
func (c *DiskCache) put(digest string, data []byte) {
	if int64(len(data)) > c.limit() {
		return
	}
	if _, ok := c.entries[digest]; ok {
		return
	}
	if err := WriteFileAtomic(c.path(digest), data); err != nil {
		return // a cache that cannot write only costs downloads
	}
	c.entries[digest] = c.order.PushFront(&diskEntry{digest: digest, size: int64(len(data))})
	c.size += int64(len(data))
	c.evict()
}

func (c *DiskCache) limit() int64 { return limitOr(c.MaxBytes, DefaultDiskCacheBytes) }

func (c *DiskCache) evict() {
	for c.size > c.limit() && c.order.Len() > 0 {
		c.remove(c.order.Back())
	}
}

func (c *DiskCache) remove(el *list.Element) {
	e := el.Value.(*diskEntry)
	c.order.Remove(el)
	delete(c.entries, e.digest)
	c.size -= e.size
	_ = os.Remove(c.path(e.digest))
}

// String describes the cache for logs.
func (c *DiskCache) String() string {
	return fmt.Sprintf("artifact cache in %s (at most %d bytes)", c.dir(), c.limit())
}

// WriteFileAtomic writes data to p through a temporary file and a rename,
// so readers see the old or the new content, never a part. It creates p's
// folder when missing.
func WriteFileAtomic(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}
