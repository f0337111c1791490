package resolve

import (
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Universe is what the catalogs offer: extension name → its versions, in any
// order.
type Universe map[string][]v1alpha1.ExtensionVersion

// Index is a Universe with every version, kubeVersion and dependency range
// parsed once, and each extension's dependency incompatibilities built
// once. Build it when Extensions change and reuse it for many solves. After
// NewIndex only its pool of solvers and its memo of installation ranges
// change, both safe for concurrent use, so concurrent Solves are safe.
type Index struct {
	exts     []extIndex     // sorted by name; an extension's id is its position
	byName   map[string]int // name → id
	skipped  int
	groups   int // dependency groups; their ids are 0 to groups-1
	maxWords int // the longest vset of any extension, in words
	// kubeRanges are the distinct kubeVersion ranges, by kube id, so a
	// Solve checks each against the cluster once and parses none.
	kubeRanges []*semver.Constraints
	solvers    sync.Pool // of *solver, reset; see newSolver

	rangeMu   sync.Mutex
	rangeMemo map[rangeKey]installRange // see Index.installRange

	// An Index made by withInstances has base set: its extensions are
	// base's followed by one copy per instance, and instances maps an
	// instance's key (InstanceKey) to its copy's id.
	base      *Index
	instances map[string]int
	copies    []instanceOf // in id order, after base's extensions

	// The required APIs of operator bundles (see withRequirements):
	// choices by version label, the texts of APIs no extension owns by
	// dependency name, and what a variant for a cluster is built from.
	choices  map[string][]ProviderChoice
	apiNotes map[string]string
	// candidates are the extensions among several that could provide a
	// required API, requiredAPIs the APIs required: only they make a
	// cluster's variant differ (see variantFor).
	candidates   map[string]bool
	requiredAPIs map[string]bool
	source       Universe
	defaults     map[string]string
	// variants are Indexes of source whose providers are chosen for the
	// extensions on a cluster (see variantFor), by variantKey.
	variantMu sync.Mutex
	variants  map[string]*Index
	// A variant has root set to the Index it was made from, and
	// clusterKey to the extensions it prefers, comma-joined.
	root       *Index
	clusterKey string
}

// maxRangeMemo bounds the installation ranges an Index remembers.
const maxRangeMemo = 4096

type rangeKey struct {
	pkg  int
	text string
}

type installRange struct {
	set vset
	c   *semver.Constraints
	err error
}

type extIndex struct {
	name     string
	versions []indexedVersion // ascending; bit i of a vset is versions[i]
	current  vset             // the versions that are not deprecated
	// byVersion finds a version index by the version as written.
	byVersion map[string]int
	kube      []kubeGroup // sorted by text
	// deps are the incompatibilities of the extension's dependency
	// groups, in group order; targets the extensions they name, in
	// first-mention order.
	deps    []depIncompatibility
	targets []int
	unitDep bool // a dependency incompatibility has one term
	// channels are an operator package's channels by name, all their
	// union, channelNames the names sorted; nil for an extension whose
	// versions have no channels. defaultChannel is the package's.
	channels       map[string]*channelIndex
	all            *channelIndex
	channelNames   []string
	defaultChannel string
}

// depIncompatibility is a dependency group as an incompatibility.
type depIncompatibility struct {
	group *depGroup
	terms []term
}

// kubeGroup is the versions of one extension that share a kubeVersion.
type kubeGroup struct {
	text     string
	kubeID   int // index into Index.kubeRanges
	versions vset
	terms    []term // the incompatibility "none of these versions"
}

type indexedVersion struct {
	spec     v1alpha1.ExtensionVersion
	sv       *semver.Version
	kube     *semver.Constraints // nil admits every cluster
	kubeText string
	kubeID   int    // index into Index.kubeRanges; -1 when kube is nil
	label    string // "name version", as texts name a selected version
	deps     []*depGroup
	parsed   []parsedDep // only while NewIndex runs
}

// depGroup is one dependency shared by several versions: every version of
// from in versions depends on to within rangeText. Grouping them lets one
// incompatibility (and one sentence) cover "every cert-manager >=1.15".
type depGroup struct {
	id        int
	from, to  int    // extension ids; to is -1 when no catalog offers it
	toName    string // the dependency's name as written
	rangeText string // as written, trimmed; "" means any
	allowed   vset   // versions of to within rangeText (nil when to is -1)
	versions  vset   // versions of from that have this dependency
}

// NewIndex parses u. Versions that do not parse, duplicates of a version
// already seen, and versions whose kubeVersion or dependency range does not
// parse are left out (such a version could never be installed safely) and
// counted in Skipped.
func NewIndex(u Universe) *Index { return newIndex(u, nil, nil, nil) }

// IndexOf is NewIndex over the Extensions' versions (UniverseOf) that also
// knows each operator package's defaultChannel, the channel of an
// installation that names none.
func IndexOf(extensions []v1alpha1.Extension) *Index {
	defaults := map[string]string{}
	for i := range extensions {
		if c := extensions[i].Spec.DefaultChannel; c != "" {
			defaults[extensions[i].Name] = c
		}
	}
	return newIndex(UniverseOf(extensions), defaults, nil, nil)
}

// newIndex indexes u, with the requirements of operator bundles turned
// into dependencies for a cluster whose installations ask for the
// extensions in onCluster and own the CRDs of the APIs in provided (see
// withRequirements).
func newIndex(u Universe, defaultChannels map[string]string, onCluster map[string]bool, provided map[string]string) *Index {
	ix := &Index{byName: make(map[string]int, len(u)), rangeMemo: map[rangeKey]installRange{},
		source: u, defaults: defaultChannels}
	u, ix.choices = withRequirements(u, onCluster, provided)
	if len(ix.choices) > 0 {
		ix.candidates, ix.requiredAPIs = map[string]bool{}, map[string]bool{}
	}
	for _, cs := range ix.choices {
		for _, c := range cs {
			ix.requiredAPIs[c.API] = true
			if len(c.Candidates) > 1 {
				for _, o := range c.Candidates {
					ix.candidates[o] = true
				}
			}
			if c.Provider == "" {
				if ix.apiNotes == nil {
					ix.apiNotes = map[string]string{}
				}
				ix.apiNotes[apiDependencyName(c.API)] = c.Reason
			}
		}
	}
	var ok bool
	names := make([]string, 0, len(u))
	for name := range u {
		names = append(names, name)
	}
	sort.Strings(names)
	// Catalogs repeat the same few range texts thousands of times, and
	// parsing one is far dearer than looking it up.
	ranges := rangeCache{}
	ix.exts = make([]extIndex, len(names))
	for id, name := range names {
		ix.byName[name] = id
		ix.exts[id] = extIndex{name: name, versions: ix.parseVersions(u[name], ranges)}
	}

	// Versions whose dependency ranges do not parse are dropped first, so
	// that every vset below is built over the final version lists.
	for id := range ix.exts {
		e := &ix.exts[id]
		kept := e.versions[:0]
		for _, v := range e.versions {
			if v.parsed, ok = parseDeps(v.spec.Dependencies, ranges); !ok {
				ix.skipped++
				continue
			}
			kept = append(kept, v)
		}
		e.versions = kept
	}

	// Dependencies are grouped per (extension, dependency, range text); a
	// range is evaluated against the dependency's versions once per index.
	type rangeKey struct {
		to   int
		text string
	}
	sets := map[rangeKey]vset{}
	groupCount := 0
	groups := map[[2]string]*depGroup{}
	for from := range ix.exts {
		e := &ix.exts[from]
		clear(groups)
		for i := range e.versions {
			v := &e.versions[i]
			for _, d := range v.parsed {
				g := groups[[2]string{d.name, d.text}]
				if g == nil {
					g = &depGroup{id: groupCount, from: from, to: -1, toName: d.name, rangeText: d.text,
						versions: make(vset, words(len(e.versions)))}
					groupCount++
					if to, known := ix.byName[d.name]; known {
						g.to = to
						k := rangeKey{to, d.text}
						s, seen := sets[k]
						if !seen {
							s = ix.rangeSet(to, d.c)
							sets[k] = s
						}
						g.allowed = s
					}
					groups[[2]string{d.name, d.text}] = g
				}
				g.versions.add(i)
				v.deps = append(v.deps, g)
			}
			v.parsed = nil
		}
		for i := range e.versions {
			for _, g := range e.versions[i].deps {
				if g.to >= 0 && !slices.Contains(e.targets, g.to) {
					e.targets = append(e.targets, g.to)
				}
			}
		}
	}
	ix.groups = groupCount
	kubeIDs := map[string]int{}
	for id := range ix.exts {
		e := &ix.exts[id]
		ix.maxWords = max(ix.maxWords, words(len(e.versions)))
		e.current = make(vset, words(len(e.versions)))
		e.byVersion = make(map[string]int, len(e.versions))
		for i := range e.versions {
			v := &e.versions[i]
			v.kubeID = -1
			e.byVersion[v.spec.Version] = i
			v.label = e.name + " " + v.spec.Version
			if !v.spec.Deprecated {
				e.current.add(i)
			}
			if v.kube == nil {
				continue
			}
			kid, seen := kubeIDs[v.kubeText]
			if !seen {
				kid = len(ix.kubeRanges)
				kubeIDs[v.kubeText] = kid
				ix.kubeRanges = append(ix.kubeRanges, v.kube)
			}
			v.kubeID = kid
			k := slices.IndexFunc(e.kube, func(k kubeGroup) bool { return k.text == v.kubeText })
			if k < 0 {
				k = len(e.kube)
				e.kube = append(e.kube, kubeGroup{text: v.kubeText, kubeID: kid, versions: make(vset, words(len(e.versions)))})
			}
			e.kube[k].versions.add(i)
		}
		indexChannels(e, defaultChannels[e.name], ranges)
		slices.SortFunc(e.kube, func(a, b kubeGroup) int { return strings.Compare(a.text, b.text) })
		for k := range e.kube {
			e.kube[k].terms = []term{{id, true, e.kube[k].versions}}
		}
	}
	// Dependency incompatibilities, once every group is complete. An
	// extension's groups have consecutive ids.
	seen := make([]bool, ix.groups)
	for id := range ix.exts {
		e := &ix.exts[id]
		lo, hi := ix.groups, -1
		for i := range e.versions {
			for _, g := range e.versions[i].deps {
				lo, hi = min(lo, g.id), max(hi, g.id)
			}
		}
		e.deps = make([]depIncompatibility, 0, max(0, hi-lo+1))
		for i := range e.versions {
			for _, g := range e.versions[i].deps {
				if seen[g.id] {
					continue
				}
				seen[g.id] = true
				if terms, ok := depIncompat(g); ok {
					e.deps = append(e.deps, depIncompatibility{group: g, terms: terms})
					e.unitDep = e.unitDep || len(terms) == 1
				}
			}
		}
	}
	return ix
}

// rangeCache holds parsed ranges by their trimmed text; a nil Constraints
// is a text that does not parse.
type rangeCache map[string]*semver.Constraints

// parse returns the range text parses to (see ParseRange), from the cache
// when the text was seen before.
func (rc rangeCache) parse(text string) (*semver.Constraints, bool) {
	c, seen := rc[text]
	if !seen {
		var err error
		if c, err = ParseRange(text); err != nil {
			c = nil
		}
		rc[text] = c
	}
	return c, c != nil
}

// installRange returns the versions of extension pkg that an
// installation's spec.version admits, the parsed range, or the parse
// error. Installations keep their ranges for a long time, so an Index
// remembers the answers (up to maxRangeMemo) for every Solve; the set is
// shared and must not be modified.
func (ix *Index) installRange(pkg int, text string) (vset, *semver.Constraints, error) {
	if ix.base != nil {
		return ix.base.installRange(ix.origin(pkg), text)
	}
	key := rangeKey{pkg, text}
	ix.rangeMu.Lock()
	r, ok := ix.rangeMemo[key]
	ix.rangeMu.Unlock()
	if ok {
		return r.set, r.c, r.err
	}
	r.c, r.err = ParseRange(text)
	if r.err == nil {
		r.set = ix.rangeSet(pkg, r.c)
	}
	ix.rangeMu.Lock()
	if len(ix.rangeMemo) < maxRangeMemo {
		ix.rangeMemo[key] = r
	}
	ix.rangeMu.Unlock()
	return r.set, r.c, r.err
}

// withInstances returns an Index that adds to ix one copy of an extension
// per instance, named by its key ("x@namespace/name", see InstanceKey), in
// the order given (see addCopy). ix is not changed; the result shares
// ix's parsed catalog and range memo and is meant for one Solve.
func (ix *Index) withInstances(instances []instanceOf) *Index {
	n := len(ix.exts)
	out := &Index{
		exts:       make([]extIndex, n, n+len(instances)),
		byName:     ix.byName,
		skipped:    ix.skipped,
		groups:     ix.groups,
		maxWords:   ix.maxWords,
		kubeRanges: ix.kubeRanges,
		base:       ix,
		instances:  make(map[string]int, len(instances)),
		choices:    ix.choices,
		apiNotes:   ix.apiNotes,
	}
	copy(out.exts, ix.exts)
	for _, in := range instances {
		out.addCopy(in)
	}
	return out
}

// addCopy adds to an Index made by withInstances a copy of extension
// in.pkg for one instance: the extension's versions, kubeVersions and
// dependencies under an id of its own, so the solver chooses its version
// apart from the extension's. Its dependencies point at the shared
// extensions, and no dependency points at it. Solvers pooled before grow
// to the new size when they are used again (see newSolver).
func (ix *Index) addCopy(in instanceOf) {
	id := len(ix.exts)
	e := ix.base.exts[in.pkg] // a copy; the slices it shares are re-made below where they name the id
	e.kube = slices.Clone(e.kube)
	for k := range e.kube {
		e.kube[k].terms = []term{{id, true, e.kube[k].versions}}
	}
	// Each dependency group is copied with the copy as its source, under
	// a new group id; versions point at the copied groups.
	copied := map[*depGroup]*depGroup{}
	regroup := func(g *depGroup) *depGroup {
		if c, ok := copied[g]; ok {
			return c
		}
		c := *g
		c.id, c.from = ix.groups, id
		if c.to == in.pkg {
			c.to = id // a self-dependency stays one
		}
		ix.groups++
		copied[g] = &c
		return &c
	}
	e.versions = slices.Clone(e.versions)
	for i := range e.versions {
		v := &e.versions[i]
		deps := make([]*depGroup, len(v.deps))
		for k, g := range v.deps {
			deps[k] = regroup(g)
		}
		v.deps = deps
	}
	e.deps = slices.Clone(e.deps)
	for k := range e.deps {
		g := regroup(e.deps[k].group)
		e.deps[k].group = g
		e.deps[k].terms, _ = depIncompat(g)
	}
	e.targets = slices.Clone(e.targets)
	for k, to := range e.targets {
		if to == in.pkg {
			e.targets[k] = id
		}
	}
	ix.exts = append(ix.exts, e)
	ix.instances[in.key] = id
	ix.copies = append(ix.copies, in)
}

// instanceOf is an instance to add to an Index: its key and the id of its
// extension.
type instanceOf struct {
	key string
	pkg int
}

// origin returns the catalog extension a copy was made from; pkg itself
// for an extension of the catalog.
func (ix *Index) origin(pkg int) int {
	if ix.base == nil || pkg < len(ix.base.exts) {
		return pkg
	}
	return ix.copies[pkg-len(ix.base.exts)].pkg
}

// key returns the key of extension pkg's Selection: its name, or an
// instance's key.
func (ix *Index) key(pkg int) string {
	if ix.base == nil || pkg < len(ix.base.exts) {
		return ix.exts[pkg].name
	}
	return ix.copies[pkg-len(ix.base.exts)].key
}

// Skipped is the number of catalog versions NewIndex left out.
func (ix *Index) Skipped() int { return ix.skipped }

func (ix *Index) parseVersions(in []v1alpha1.ExtensionVersion, ranges rangeCache) []indexedVersion {
	out := make([]indexedVersion, 0, len(in))
	for _, spec := range in {
		sv, err := semver.NewVersion(spec.Version)
		if err != nil {
			ix.skipped++
			continue
		}
		iv := indexedVersion{spec: spec, sv: sv, kubeText: strings.TrimSpace(spec.KubeVersion)}
		if iv.kubeText != "" {
			var ok bool
			if iv.kube, ok = ranges.parse(iv.kubeText); !ok {
				ix.skipped++
				continue
			}
		}
		out = append(out, iv)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].sv.LessThan(out[j].sv) })
	dedup := out[:0]
	for i, v := range out {
		if i > 0 && v.sv.Equal(out[i-1].sv) {
			ix.skipped++ // the same version twice: the first listed wins
			continue
		}
		dedup = append(dedup, v)
	}
	return dedup
}

type parsedDep struct {
	name, text string
	c          *semver.Constraints
}

// parseDeps parses a version's dependency ranges, returning false when one
// does not parse.
func parseDeps(deps []v1alpha1.Dependency, ranges rangeCache) ([]parsedDep, bool) {
	out := make([]parsedDep, 0, len(deps))
	for _, d := range deps {
		text := strings.TrimSpace(d.Version)
		c, ok := ranges.parse(text)
		if !ok {
			return nil, false
		}
		out = append(out, parsedDep{name: d.Name, text: text, c: c})
	}
	return out, true
}

// rangeSet returns the known versions of extension e that c admits,
// following Masterminds' rule that pre-releases match only a range that
// names a pre-release.
func (ix *Index) rangeSet(e int, c *semver.Constraints) vset {
	vs := ix.exts[e].versions
	s := make(vset, words(len(vs)))
	for i := range vs {
		if c.Check(vs[i].sv) {
			s.add(i)
		}
	}
	return s
}

// ParseRange parses a version range as written in spec.version,
// kubeVersion or dependencies[].version; "" means any version.
func ParseRange(text string) (*semver.Constraints, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		text = "*"
	}
	return semver.NewConstraint(text)
}
