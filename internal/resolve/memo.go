package resolve

import (
	"slices"
	"strings"
	"sync"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// ClusterMemo keeps one cluster's problem between reconciles, and the
// resolutions of its last few states, so that a reconcile whose cluster
// has not changed since the last solve costs no solve, and one whose
// cluster has changed restates only the installations that changed.
//
// Every reconcile of an installation on the cluster passes what the cache
// holds (Refresh): the installations are the cache's own objects, which
// the cache replaces and never modifies, so an installation whose object
// is the one seen last time has the same requirement and is not stated
// again. A change of any requirement, an installation that comes or
// goes, moves the memo's epoch; a resolution is reused only for the epoch,
// cluster version, catalog and provided APIs it was solved for, so it is
// the answer a whole-cluster solve gives (Solve is deterministic).
//
// A ClusterMemo is safe for concurrent use. The zero value is ready.
type ClusterMemo struct {
	mu     sync.Mutex
	rows   map[memoName]*memoRow
	pass   uint64
	epoch  uint64
	sorted []*memoRow // by name; nil after an installation came or went
	// problem holds every row in name order at epoch; it is never
	// modified once built: snapshots share it.
	problem []Installation
	asked   []string       // the distinct extensions asked for at epoch, sorted
	counts  map[string]int // installations by extension
	solved  []memoSolve    // most recent last, at most memoSolves
}

// memoSolves bounds the resolutions a ClusterMemo keeps: enough for the
// few states reconciles running at the same moment may see.
const memoSolves = 4

type memoName struct{ namespace, name string }

type memoRow struct {
	// from is the cache object the row was stated from; nil for a copy
	// that is not the cache's (a reconcile's own), whose row is stated
	// again on every Refresh.
	from *v1alpha1.ExtensionInstallation
	row  Installation
	seen uint64
}

type memoSolve struct {
	epoch          uint64
	clusterVersion string
	catalog        string
	provided       map[string]string
	resolution     *Resolution
}

// ClusterState is the cluster as one Refresh saw it: read it, never
// modify what it holds.
type ClusterState struct {
	epoch   uint64
	problem []Installation
	asked   []string
}

// Asked lists the extensions the cluster's installations ask for,
// without repeats, sorted.
func (s ClusterState) Asked() []string { return s.asked }

// Problem states the cluster for the solver: ProblemFor's answer for the
// installations Refresh was given.
func (s ClusterState) Problem(clusterVersion string, provided map[string]string) Problem {
	return Problem{ClusterVersion: clusterVersion, Installations: s.problem, Provided: provided}
}

// Refresh brings the memo up to insts, every installation on the cluster,
// in any order, no name twice. They are the cache's objects, which are
// never modified, except fresh (nil when none): a reconcile's own copy
// of its installation, stated again each time.
func (m *ClusterMemo) Refresh(insts []*v1alpha1.ExtensionInstallation, fresh *v1alpha1.ExtensionInstallation) ClusterState {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows == nil {
		m.rows, m.counts = map[memoName]*memoRow{}, map[string]int{}
	}
	m.pass++
	changed, extsChanged := false, false
	for _, inst := range insts {
		key := memoName{inst.Namespace, inst.Name}
		e := m.rows[key]
		switch {
		case e == nil:
			e = &memoRow{row: InstallationOf(inst, inst.Namespace+"/"+inst.Name)}
			m.rows[key] = e
			m.sorted = nil
			changed = true
			extsChanged = m.count(e.row.Extension, 1) || extsChanged
		case e.from != inst || inst == fresh:
			row := InstallationOf(inst, e.row.Name)
			if row != e.row {
				changed = true
				if row.Extension != e.row.Extension {
					extsChanged = m.count(e.row.Extension, -1) || extsChanged
					extsChanged = m.count(row.Extension, 1) || extsChanged
				}
				e.row = row
			}
		}
		e.from, e.seen = inst, m.pass
		if inst == fresh {
			e.from = nil
		}
	}
	if len(m.rows) != len(insts) {
		for key, e := range m.rows {
			if e.seen != m.pass {
				delete(m.rows, key)
				extsChanged = m.count(e.row.Extension, -1) || extsChanged
				m.sorted = nil
				changed = true
			}
		}
	}
	if changed || m.problem == nil {
		m.epoch++
		m.restate()
		m.solved = nil // solved for epochs no Refresh returns again
	}
	if extsChanged || m.asked == nil {
		m.asked = make([]string, 0, len(m.counts))
		for ext := range m.counts {
			m.asked = append(m.asked, ext)
		}
		slices.Sort(m.asked)
	}
	return ClusterState{epoch: m.epoch, problem: m.problem, asked: m.asked}
}

// count adds n to extension's installations and reports whether the set
// of extensions asked for changed.
func (m *ClusterMemo) count(extension string, n int) bool {
	before := m.counts[extension]
	if before+n == 0 {
		delete(m.counts, extension)
	} else {
		m.counts[extension] = before + n
	}
	return (before == 0) != (before+n == 0)
}

// restate builds the problem's rows for a new epoch, in name order.
func (m *ClusterMemo) restate() {
	if m.sorted == nil {
		m.sorted = make([]*memoRow, 0, len(m.rows))
		for _, e := range m.rows {
			m.sorted = append(m.sorted, e)
		}
		slices.SortFunc(m.sorted, func(a, b *memoRow) int { return strings.Compare(a.row.Name, b.row.Name) })
	}
	problem := make([]Installation, len(m.sorted))
	for i, e := range m.sorted {
		problem[i] = e.row
	}
	m.problem = problem
}

// Resolve returns the resolution of st's problem for clusterVersion with
// provided (Problem.Provided), over catalog (what identifies the
// Extensions on offer: it must change whenever they do): the one solved
// for the same inputs if the memo keeps it, else solve's answer, which it
// keeps. The resolution is shared: never modify it.
func (m *ClusterMemo) Resolve(st ClusterState, clusterVersion, catalog string, provided map[string]string, solve func(Problem) *Resolution) *Resolution {
	m.mu.Lock()
	for _, s := range m.solved {
		if s.epoch == st.epoch && s.clusterVersion == clusterVersion && s.catalog == catalog && sameAPIs(s.provided, provided) {
			m.mu.Unlock()
			return s.resolution
		}
	}
	m.mu.Unlock()
	resolution := solve(st.Problem(clusterVersion, provided))
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.epoch == m.epoch { // what is older is not asked for again
		if len(m.solved) == memoSolves {
			m.solved = slices.Delete(m.solved, 0, 1)
		}
		m.solved = append(m.solved, memoSolve{epoch: st.epoch, clusterVersion: clusterVersion, catalog: catalog,
			provided: cloneAPIs(provided), resolution: resolution})
	}
	return resolution
}

// sameAPIs reports whether a and b hold the same entries (nil is empty,
// as for the solver).
func sameAPIs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func cloneAPIs(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// CatalogOf identifies the Extensions on offer for Resolve: their names
// and resourceVersions, which change whenever they do.
func CatalogOf(extensions []v1alpha1.Extension) string {
	keys := make([]string, len(extensions))
	for i := range extensions {
		keys[i] = extensions[i].Name + "@" + extensions[i].ResourceVersion
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// ClusterMemos holds each cluster's ClusterMemo: what a reconcile of one
// installation needs of the resolution costs what changed on its cluster
// since the last one, not a restatement and a solve of every installation
// there. A memo holds its cluster's requirements (a few strings per
// installation) and its last resolutions. The zero value is ready, and
// safe for concurrent use.
type ClusterMemos struct{ byCluster sync.Map } // cluster → *ClusterMemo

// Of returns cluster's memo, made empty the first time.
func (c *ClusterMemos) Of(cluster string) *ClusterMemo {
	if m, ok := c.byCluster.Load(cluster); ok {
		return m.(*ClusterMemo)
	}
	m, _ := c.byCluster.LoadOrStore(cluster, &ClusterMemo{})
	return m.(*ClusterMemo)
}

// ForgetIfEmpty drops cluster's memo once no installation but ones being
// deleted is on it (on lists them: the cache's; an error of it keeps the
// memo), so that the memos of clusters emptied or removed do not stay for
// the manager's life. A reconcile racing with it makes the memo again, at
// the cost of one whole solve.
func (c *ClusterMemos) ForgetIfEmpty(cluster string, on func(string) ([]*v1alpha1.ExtensionInstallation, error)) {
	insts, err := on(cluster)
	if err != nil {
		return
	}
	for _, inst := range insts {
		if inst.DeletionTimestamp.IsZero() {
			return
		}
	}
	c.byCluster.Delete(cluster)
}
