package helm

import (
	"crypto/sha256"
	"sync"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
)

// checkedArchives keeps the files of the chart archives loadChart checked
// and unpacked last, by the archive's SHA-256: a thousand installations
// of one chart, each rendered on every reconcile, unpack it once. Only
// the files are kept, never a loaded chart (loading builds a chart that
// rendering changes: subcharts disabled by values are dropped from it).
// The files' bytes are shared and never written: the loader and the
// template engine only read them.
var checkedArchives = &archiveFiles{max: 64 << 20}

// archiveFiles is a cache bounded by the bytes of the files it holds:
// past max, the least recently used archives go.
type archiveFiles struct {
	mu    sync.Mutex
	max   int
	size  int
	order []digest // least recently used first
	files map[digest]cachedArchive
}

type digest [sha256.Size]byte

type cachedArchive struct {
	files []*archive.BufferedFile
	size  int
}

// get returns the files of the archive with sum, if kept.
func (c *archiveFiles) get(sum digest) ([]*archive.BufferedFile, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.files[sum]
	if ok {
		c.touch(sum)
	}
	return a.files, ok
}

// put keeps files as the archive's with sum, unless they alone pass max.
func (c *archiveFiles) put(sum digest, files []*archive.BufferedFile) {
	size := 0
	for _, f := range files {
		size += len(f.Name) + len(f.Data)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.files[sum]; ok || size > c.max {
		return
	}
	if c.files == nil {
		c.files = map[digest]cachedArchive{}
	}
	for c.size+size > c.max && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= c.files[old].size
		delete(c.files, old)
	}
	c.files[sum] = cachedArchive{files: files, size: size}
	c.order = append(c.order, sum)
	c.size += size
}

func (c *archiveFiles) touch(sum digest) {
	for i, d := range c.order {
		if d == sum {
			c.order = append(append(c.order[:i:i], c.order[i+1:]...), sum)
			return
		}
	}
}
