package wake

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// FinalizedFor is how long Finalized remembers an object: far longer than
// a cache takes to show a finalizer gone, short enough that the set stays
// as small as the uninstalls of that span.
const FinalizedFor = 2 * time.Minute

// Finalized remembers the objects whose finalizer this manager removed,
// by UID, until FinalizedFor has passed. A reconcile queued before the
// removal (a watch event of the uninstall's own deletes, say) reads the
// object from a cache that may still show the finalizer; with Finalized
// it knows the uninstall is over and does not run it again. The zero
// value is ready; it is safe for concurrent use.
type Finalized struct {
	mu   sync.Mutex
	uids map[types.UID]time.Time
}

// Add remembers uid as finalized at now, and forgets the UIDs added more
// than FinalizedFor before now.
func (f *Finalized) Add(uid types.UID, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.uids == nil {
		f.uids = map[types.UID]time.Time{}
	}
	for u, at := range f.uids {
		if now.Sub(at) > FinalizedFor {
			delete(f.uids, u)
		}
	}
	f.uids[uid] = now
}

// Has reports whether uid was finalized less than FinalizedFor before now.
func (f *Finalized) Has(uid types.UID, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.uids[uid]
	return ok && now.Sub(at) <= FinalizedFor
}
