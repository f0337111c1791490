package resolve

import (
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Universe is what the catalogs offer: extension name → its versions, in any
// order.
type Universe map[string][]v1alpha1.ExtensionVersion

// Index is a Universe with every version, kubeVersion and dependency range
// parsed once. Build it when Extensions change and reuse it for many solves;
// an Index is never modified after NewIndex, so concurrent Solves are safe.
type Index struct {
	exts    []extIndex     // sorted by name; an extension's id is its position
	byName  map[string]int // name → id
	skipped int
}

type extIndex struct {
	name     string
	versions []indexedVersion // ascending; bit i of a vset is versions[i]
	current  vset             // the versions that are not deprecated
}

type indexedVersion struct {
	spec     v1alpha1.ExtensionVersion
	sv       *semver.Version
	kube     *semver.Constraints // nil admits every cluster
	kubeText string
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
func NewIndex(u Universe) *Index {
	ix := &Index{byName: make(map[string]int, len(u))}
	var ok bool
	names := make([]string, 0, len(u))
	for name := range u {
		names = append(names, name)
	}
	sort.Strings(names)
	ix.exts = make([]extIndex, len(names))
	for id, name := range names {
		ix.byName[name] = id
		ix.exts[id] = extIndex{name: name, versions: ix.parseVersions(u[name])}
	}

	// Versions whose dependency ranges do not parse are dropped first, so
	// that every vset below is built over the final version lists.
	for id := range ix.exts {
		e := &ix.exts[id]
		kept := e.versions[:0]
		for _, v := range e.versions {
			if v.parsed, ok = parseDeps(v.spec.Dependencies); !ok {
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
	for from := range ix.exts {
		e := &ix.exts[from]
		groups := map[[2]string]*depGroup{}
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
	}
	for id := range ix.exts {
		e := &ix.exts[id]
		e.current = make(vset, words(len(e.versions)))
		for i, v := range e.versions {
			if !v.spec.Deprecated {
				e.current.add(i)
			}
		}
	}
	return ix
}

// Skipped is the number of catalog versions NewIndex left out.
func (ix *Index) Skipped() int { return ix.skipped }

func (ix *Index) parseVersions(in []v1alpha1.ExtensionVersion) []indexedVersion {
	out := make([]indexedVersion, 0, len(in))
	for _, spec := range in {
		sv, err := semver.NewVersion(spec.Version)
		if err != nil {
			ix.skipped++
			continue
		}
		iv := indexedVersion{spec: spec, sv: sv, kubeText: strings.TrimSpace(spec.KubeVersion)}
		if iv.kubeText != "" {
			if iv.kube, err = semver.NewConstraint(iv.kubeText); err != nil {
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
func parseDeps(deps []v1alpha1.Dependency) ([]parsedDep, bool) {
	out := make([]parsedDep, 0, len(deps))
	for _, d := range deps {
		text := strings.TrimSpace(d.Version)
		c, err := ParseRange(text)
		if err != nil {
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
