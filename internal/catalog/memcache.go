package catalog

import (
	"container/list"
	"context"
	"sync"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// ArtifactFetcher fetches one artifact; sources.Artifacts is one.
type ArtifactFetcher interface {
	FetchArtifact(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error)
}

// MemoryCache keeps recently fetched artifacts in memory, keyed by digest,
// so that an installation re-read every few seconds while it becomes healthy
// downloads its chart once. Only artifacts with a digest are cached (their
// content cannot change); the least recently used are evicted beyond
// MaxBytes. It is safe for concurrent use.
type MemoryCache struct {
	Next     ArtifactFetcher
	MaxBytes int64 // default 64 MiB

	mu      sync.Mutex
	size    int64
	order   *list.List // front: most recently used digest
	entries map[string]*list.Element
}

type cacheEntry struct {
	digest string
	data   []byte
}

// FetchArtifact returns the cached bytes for src.Digest, or fetches them
// through Next. The returned slice must not be modified.
func (c *MemoryCache) FetchArtifact(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	if src.Digest == "" {
		return c.Next.FetchArtifact(ctx, src)
	}
	if data, ok := c.get(src.Digest); ok {
		return data, nil
	}
	data, err := c.Next.FetchArtifact(ctx, src) // verifies the digest
	if err != nil {
		return nil, err
	}
	c.put(src.Digest, data)
	return data, nil
}

func (c *MemoryCache) get(digest string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[digest]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).data, true
}

func (c *MemoryCache) put(digest string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := c.MaxBytes
	if limit <= 0 {
		limit = 64 << 20
	}
	if int64(len(data)) > limit {
		return
	}
	if c.entries == nil {
		c.entries, c.order = map[string]*list.Element{}, list.New()
	}
	if _, ok := c.entries[digest]; ok {
		return
	}
	c.entries[digest] = c.order.PushFront(&cacheEntry{digest: digest, data: data})
	c.size += int64(len(data))
	for c.size > limit {
		oldest := c.order.Back()
		e := oldest.Value.(*cacheEntry)
		c.order.Remove(oldest)
		delete(c.entries, e.digest)
		c.size -= int64(len(e.data))
	}
}
