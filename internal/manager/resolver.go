package manager

import (
	"crypto/sha256"
	"encoding/binary"
	"sort"
	"strings"
	"sync"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/resolve"
)

// indexedResolver solves with a resolve.Index that is rebuilt only when the
// Extensions change (a new resourceVersion, an Extension added or removed),
// and remembers recent resolutions by the cluster state they were made for:
// every installation of a cluster reconciled in a row asks the same
// question, and the solver answers it once. Resolutions it returns are
// shared and must not be modified.
type indexedResolver struct {
	mu          sync.Mutex
	fingerprint string
	index       *resolve.Index
	resolutions map[[sha256.Size]byte]*resolve.Resolution // by problemKey, for this index
}

// maxResolutions bounds the resolutions kept: one per cluster state in flight.
const maxResolutions = 64

// Solve implements installation.Resolver.
func (r *indexedResolver) Solve(extensions []v1alpha1.Extension, p resolve.Problem) *resolve.Resolution {
	ix := r.indexFor(extensions)
	key := problemKey(p)
	r.mu.Lock()
	res, ok := r.resolutions[key]
	r.mu.Unlock()
	if ok {
		return res
	}
	res = ix.SolveDistinct(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.index == ix { // the Extensions did not change meanwhile
		if len(r.resolutions) >= maxResolutions {
			clear(r.resolutions)
		}
		r.resolutions[key] = res
	}
	return res
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
	r.index, r.fingerprint = resolve.IndexOf(extensions), fingerprint
	r.resolutions = map[[sha256.Size]byte]*resolve.Resolution{}
	return r.index
}

// problemKey identifies a problem: the SHA-256 of the cluster version and
// every installation's request, in order (ProblemFor sorts them), each
// string prefixed with its length so that no two problems write the same
// bytes, then Provided's entries in order. It runs on every reconcile
// over every installation of the cluster, so it formats nothing.
func problemKey(p resolve.Problem) [sha256.Size]byte {
	h := sha256.New()
	buf := make([]byte, 0, 256)
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	flag := func(b bool) {
		if b {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
	}
	str(p.ClusterVersion)
	for _, i := range p.Installations {
		str(i.Name)
		str(i.Extension)
		str(i.Range)
		str(i.Installed)
		flag(i.Automatic)
		flag(i.AllowDowngrade)
		flag(i.Separable)
		str(i.ClusterScoped)
		str(i.Channel)
		flag(i.AnyInRange)
		h.Write(buf)
		buf = buf[:0]
	}
	// The APIs the cluster's installations own CRDs of, in API order.
	apis := make([]string, 0, len(p.Provided))
	for api := range p.Provided {
		apis = append(apis, api)
	}
	sort.Strings(apis)
	for _, api := range apis {
		str(api)
		str(p.Provided[api])
	}
	h.Write(buf)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}
