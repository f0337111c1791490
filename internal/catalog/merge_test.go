package catalog_test

import (
	"reflect"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
)

func pkg(name, description string, versions ...string) catalog.Package {
	p := catalog.Package{Name: name, Spec: v1alpha1.ExtensionSpec{DisplayName: name, Description: description}}
	for _, v := range versions {
		p.Spec.Versions = append(p.Spec.Versions, v1alpha1.ExtensionVersion{Version: v, Source: v1alpha1.ArtifactSource{URL: "https://" + description + "/" + v}})
	}
	return p
}

// offered lists "version@catalog" of spec, in order.
func offered(spec v1alpha1.ExtensionSpec) []string {
	var out []string
	for _, v := range spec.Versions {
		out = append(out, v.Version+"@"+v.Source.Catalog)
	}
	return out
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name    string
		in      []catalog.CatalogIndex
		want    map[string][]string
		display map[string]string // extension → description (its catalog)
	}{{
		// One catalog: its content as is, catalog filled in.
		name:    "single catalog",
		in:      []catalog.CatalogIndex{{Name: "a", Packages: []catalog.Package{pkg("web", "a", "1.1.0", "1.0.0")}}},
		want:    map[string][]string{"web": {"1.1.0@a", "1.0.0@a"}},
		display: map[string]string{"web": "a"},
	}, {
		// Versions of one extension from two catalogs are merged, highest first.
		name: "union of versions",
		in: []catalog.CatalogIndex{
			{Name: "a", Packages: []catalog.Package{pkg("web", "a", "1.0.0")}},
			{Name: "b", Packages: []catalog.Package{pkg("web", "b", "2.0.0")}},
		},
		want:    map[string][]string{"web": {"2.0.0@b", "1.0.0@a"}},
		display: map[string]string{"web": "a"},
	}, {
		// A version both offer comes from the higher priority; so do the display fields.
		name: "priority wins",
		in: []catalog.CatalogIndex{
			{Name: "a", Priority: 1, Packages: []catalog.Package{pkg("web", "a", "1.0.0")}},
			{Name: "b", Priority: 5, Packages: []catalog.Package{pkg("web", "b", "1.0.0", "0.9.0")}},
		},
		want:    map[string][]string{"web": {"1.0.0@b", "0.9.0@b"}},
		display: map[string]string{"web": "b"},
	}, {
		// Equal priorities: the catalog name sorting first wins, whatever the input order.
		name: "tie broken by name",
		in: []catalog.CatalogIndex{
			{Name: "zeta", Packages: []catalog.Package{pkg("web", "zeta", "1.0.0")}},
			{Name: "alpha", Packages: []catalog.Package{pkg("web", "alpha", "1.0.0")}},
		},
		want:    map[string][]string{"web": {"1.0.0@alpha"}},
		display: map[string]string{"web": "alpha"},
	}, {
		// "v1.0.0" and "1.0.0" are one version.
		name: "same semantic version",
		in: []catalog.CatalogIndex{
			{Name: "a", Priority: 2, Packages: []catalog.Package{pkg("web", "a", "v1.0.0")}},
			{Name: "b", Packages: []catalog.Package{pkg("web", "b", "1.0.0")}},
		},
		want:    map[string][]string{"web": {"v1.0.0@a"}},
		display: map[string]string{"web": "a"},
	}, {
		// Extensions only one catalog has stay separate; nothing in → nothing out.
		name: "disjoint extensions",
		in: []catalog.CatalogIndex{
			{Name: "a", Packages: []catalog.Package{pkg("web", "a", "1.0.0")}},
			{Name: "b", Packages: []catalog.Package{pkg("db", "b", "3.0.0")}},
			{Name: "c"},
		},
		want:    map[string][]string{"web": {"1.0.0@a"}, "db": {"3.0.0@b"}},
		display: map[string]string{"web": "a", "db": "b"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := make([]catalog.CatalogIndex, len(tt.in))
			copy(before, tt.in)
			got := catalog.Merge(tt.in)
			gotOffered := map[string][]string{}
			for name, spec := range got {
				gotOffered[name] = offered(spec)
				if spec.Description != tt.display[name] {
					t.Errorf("%s: display fields from %q, want %q", name, spec.Description, tt.display[name])
				}
			}
			if !reflect.DeepEqual(gotOffered, tt.want) {
				t.Fatalf("Merge() = %v, want %v", gotOffered, tt.want)
			}
			if !reflect.DeepEqual(before, tt.in) {
				t.Fatal("Merge modified its input")
			}
		})
	}
}
