package catalog

import (
	"cmp"
	"slices"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// CatalogIndex is one catalog's content as Merge weighs it.
type CatalogIndex struct {
	// Name is the Catalog's name; it breaks ties of Priority (the name
	// sorting first wins).
	Name string
	// Priority is spec.priority: the highest supplies a version several
	// catalogs offer.
	Priority int32
	// Packages are the catalog's extensions.
	Packages []Package
}

// Merge combines the content of several catalogs into one ExtensionSpec per
// extension name. Every version any catalog offers appears once: a version
// several catalogs offer (compared as semantic versions, so "v1.0.0" and
// "1.0.0" are one) comes from the catalog with the highest Priority, on a
// tie from the one whose name sorts first; its Source.Catalog says which.
// The display fields (name, description, icon, home, keywords) come from
// that same preferred catalog among those offering the extension. Versions
// are sorted highest first. Merge is pure; the inputs are not modified.
func Merge(indexes []CatalogIndex) map[string]v1alpha1.ExtensionSpec {
	ordered := slices.Clone(indexes)
	slices.SortStableFunc(ordered, func(a, b CatalogIndex) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.Name, b.Name))
	})
	type merged struct {
		spec     v1alpha1.ExtensionSpec
		versions []*semver.Version
		seen     map[string]bool
	}
	byName := map[string]*merged{}
	for _, idx := range ordered {
		for _, pkg := range idx.Packages {
			m := byName[pkg.Name]
			if m == nil {
				spec := pkg.Spec
				spec.Keywords = slices.Clone(spec.Keywords)
				spec.Versions = nil
				m = &merged{spec: spec, seen: map[string]bool{}}
				byName[pkg.Name] = m
			}
			for _, v := range pkg.Spec.Versions {
				sv, err := semver.NewVersion(v.Version)
				if err != nil {
					continue // helm.ParseIndex never yields one; a hand-made Package might
				}
				key := sv.String()
				if m.seen[key] {
					continue
				}
				m.seen[key] = true
				v := *v.DeepCopy()
				if v.Source.Catalog == "" {
					v.Source.Catalog = idx.Name
				}
				m.spec.Versions = append(m.spec.Versions, v)
				m.versions = append(m.versions, sv)
			}
		}
	}
	out := make(map[string]v1alpha1.ExtensionSpec, len(byName))
	for name, m := range byName {
		if len(m.spec.Versions) == 0 {
			continue
		}
		order := make([]int, len(m.versions))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(i, j int) int {
			if c := m.versions[j].Compare(m.versions[i]); c != 0 {
				return c
			}
			return cmp.Compare(m.spec.Versions[i].Version, m.spec.Versions[j].Version)
		})
		sorted := make([]v1alpha1.ExtensionVersion, len(order))
		for i, k := range order {
			sorted[i] = m.spec.Versions[k]
		}
		m.spec.Versions = sorted
		out[name] = m.spec
	}
	return out
}
