package manager

import (
	"sort"
	"strings"
	"sync"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/resolve"
)

// indexedResolver solves with a resolve.Index that is rebuilt only when the
// Extensions change (a new resourceVersion, an Extension added or removed),
// so that each reconcile pays for the solve and not for parsing every
// version and range again.
type indexedResolver struct {
	mu          sync.Mutex
	fingerprint string
	index       *resolve.Index
}

// Solve implements installation.Resolver.
func (r *indexedResolver) Solve(extensions []v1alpha1.Extension, p resolve.Problem) *resolve.Plan {
	return r.indexFor(extensions).Solve(p)
}

func (r *indexedResolver) indexFor(extensions []v1alpha1.Extension) *resolve.Index {
	keys := make([]string, len(extensions))
	for i := range extensions {
		keys[i] = extensions[i].Name + "@" + extensions[i].ResourceVersion
	}
	sort.Strings(keys)
	fingerprint := strings.Join(keys, ",")

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.index != nil && r.fingerprint == fingerprint {
		return r.index
	}
	r.index, r.fingerprint = resolve.NewIndex(resolve.UniverseOf(extensions)), fingerprint
	return r.index
}
