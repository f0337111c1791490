package builtin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/builtin"
	"github.com/annex-platform/annex/internal/catalog/olm"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/engine/bundle"
)

// TestIndexOperators checks the built-in example operator as an
// installation sees it: one Extension of engine Bundle with the File-Based
// Catalog's channels and edges (stable 0.1.0 → 0.2.0; fast 0.1.0 → 0.2.0
// → 0.3.0 → 0.4.0, with a skipRange from 0.1.0 to 0.3.0), install modes
// (0.4.0, with a conversion webhook, AllNamespaces only), owned APIs
// (0.4.0 adds Banner v1beta1) and minimum Kubernetes version, each
// version served as builtin://example-operator/<version> with its
// archive's digest; fetched as an installation fetches it, each is the
// bundle of its folder, which converts in every install mode it supports.
func TestIndexOperators(t *testing.T) {
	index, err := builtin.Index("builtin")
	if err != nil {
		t.Fatal(err)
	}
	var op *catalog.Package
	for i := range index.Packages {
		if index.Packages[i].Name == "example-operator" {
			op = &index.Packages[i]
		}
	}
	if op == nil {
		t.Fatal("no example-operator in the built-in catalog")
	}
	if op.Spec.DefaultChannel != "stable" || op.Spec.DisplayName != "Example Operator" || op.Spec.Description == "" {
		t.Errorf("example-operator: defaultChannel %q, displayName %q, description %q", op.Spec.DefaultChannel, op.Spec.DisplayName, op.Spec.Description)
	}
	every := []string{"OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"}
	v1alpha1Only := []string{"example.annex.dev/v1alpha1/Banner"}
	want := []struct {
		version  string
		channels []v1alpha1.ChannelEntry
		modes    []string
		apis     []string
	}{
		{"0.4.0", []v1alpha1.ChannelEntry{{Name: "fast", Replaces: "0.3.0"}}, []string{"AllNamespaces"},
			[]string{"example.annex.dev/v1alpha1/Banner", "example.annex.dev/v1beta1/Banner"}},
		{"0.3.0", []v1alpha1.ChannelEntry{{Name: "fast", Replaces: "0.2.0", SkipRange: ">=0.1.0 <0.3.0"}}, every, v1alpha1Only},
		{"0.2.0", []v1alpha1.ChannelEntry{{Name: "fast", Replaces: "0.1.0"}, {Name: "stable", Replaces: "0.1.0"}}, every, v1alpha1Only},
		{"0.1.0", []v1alpha1.ChannelEntry{{Name: "fast"}, {Name: "stable"}}, every, v1alpha1Only},
	}
	if len(op.Spec.Versions) != len(want) {
		t.Fatalf("%d versions, want %d", len(op.Spec.Versions), len(want))
	}
	fetcher := sources.Artifacts{Fetcher: &catalog.Fetcher{Builtin: builtin.Archive}}
	for i, v := range op.Spec.Versions {
		w := want[i]
		if v.Version != w.version || v.Engine != v1alpha1.EngineBundle || !reflect.DeepEqual(v.Channels, w.channels) || v.KubeVersion != ">=1.30.0" {
			t.Errorf("version %d: %s engine %s channels %+v kubeVersion %q; want %s, Bundle, %+v, >=1.30.0", i, v.Version, v.Engine, v.Channels, v.KubeVersion, w.version, w.channels)
		}
		if v.Operator == nil || !slices.Equal(v.Operator.InstallModes, w.modes) || !slices.Equal(v.Operator.OwnedAPIs, w.apis) {
			t.Errorf("%s: operator %+v, want install modes %v and APIs %v", v.Version, v.Operator, w.modes, w.apis)
		}
		archive, err := builtin.Archive("example-operator", v.Version)
		if err != nil {
			t.Fatal(err)
		}
		wantSource := v1alpha1.ArtifactSource{Catalog: "builtin", URL: "builtin://example-operator/" + v.Version, Digest: catalog.Digest(archive)}
		if v.Source != wantSource {
			t.Errorf("%s: source %+v, want %+v", v.Version, v.Source, wantSource)
		}
		files, err := fetcher.FetchBundle(context.Background(), v.Source)
		if err != nil {
			t.Fatalf("%s: FetchBundle: %v", v.Version, err)
		}
		b, err := bundle.Load(files)
		if err != nil {
			t.Fatalf("%s: %v", v.Version, err)
		}
		if b.Package != "example-operator" || b.CSV.Spec.Version != v.Version || b.CSV.Metadata.Name != "example-operator.v"+v.Version {
			t.Errorf("%s: the archive holds %s %s (CSV %s)", v.Version, b.Package, b.CSV.Spec.Version, b.CSV.Metadata.Name)
		}
		watches := [][]string{nil, {"operators"}, {"team-a"}, {"team-a", "team-b"}}
		if len(w.modes) == 1 {
			watches = watches[:1]
		}
		certs := &bundle.CertificateInputs{Now: time.Now(), Secret: func(string) map[string][]byte { return nil }}
		for _, watch := range watches {
			if _, err := bundle.Convert(b, bundle.Options{InstallNamespace: "operators", WatchNamespaces: watch, Name: "example-operator", Certificates: certs}); err != nil {
				t.Errorf("%s watching %v: %v", v.Version, watch, err)
			}
		}
	}
}

// TestOperatorCatalogMatchesBundles guards the hand-written File-Based
// Catalog against drifting from the bundles it describes: what each
// olm.bundle says (version, install modes, minimum Kubernetes version,
// owned API, image) and each channel entry's replaces and skipRange agree
// with the bundle's ClusterServiceVersion, and the CSV's Deployment runs
// the image of its version.
func TestOperatorCatalogMatchesBundles(t *testing.T) {
	index, err := olm.Parse(mustOpen(t, filepath.Join("operators", "configs", "example-operator", "catalog.yaml")), "builtin")
	if err != nil || len(index.Skipped) > 0 || len(index.Packages) != 1 {
		t.Fatalf("olm.Parse: %v, skipped %q, %d packages", err, index.Skipped, len(index.Packages))
	}
	for _, v := range index.Packages[0].Spec.Versions {
		b := loadBundleDir(t, filepath.Join("operators", "bundles", "example-operator-"+v.Version))
		csv := b.CSV
		var supported []string
		for _, m := range csv.Spec.InstallModes {
			if m.Supported {
				supported = append(supported, string(m.Type))
			}
		}
		if csv.Spec.Version != v.Version || !slices.Equal(supported, v.Operator.InstallModes) || ">="+csv.Spec.MinKubeVersion != v.KubeVersion {
			t.Errorf("%s: the CSV says version %s, install modes %v, minKubeVersion %s; the catalog %s, %v, %s",
				v.Version, csv.Spec.Version, supported, csv.Spec.MinKubeVersion, v.Version, v.Operator.InstallModes, v.KubeVersion)
		}
		for _, ch := range v.Channels {
			replaces := strings.TrimPrefix(csv.Spec.Replaces, "example-operator.v")
			if ch.Replaces != replaces || ch.SkipRange != csv.Metadata.Annotations["olm.skipRange"] {
				t.Errorf("%s in channel %s: replaces %q skipRange %q; the CSV: replaces %q, olm.skipRange %q",
					v.Version, ch.Name, ch.Replaces, ch.SkipRange, replaces, csv.Metadata.Annotations["olm.skipRange"])
			}
			if !slices.Contains(b.Channels, ch.Name) {
				t.Errorf("%s: channel %s is not in the bundle's annotations (%v)", v.Version, ch.Name, b.Channels)
			}
		}
		var owned []string
		for _, o := range csv.Spec.CustomResourceDefinitions.Owned {
			owned = append(owned, "example.annex.dev/"+o.Version+"/"+o.Kind)
		}
		if !slices.Equal(owned, v.Operator.OwnedAPIs) {
			t.Errorf("%s: the CSV owns %v, the catalog says %v", v.Version, owned, v.Operator.OwnedAPIs)
		}
		image := "annex.dev/example-operator:" + v.Version
		d := csv.Spec.Install.Spec.Deployments
		if raw, _ := json.Marshal(d); len(d) != 1 || !strings.Contains(string(raw), `"image":"`+image+`"`) {
			t.Errorf("%s: the Deployment does not run %s", v.Version, image)
		}
	}
}

func loadBundleDir(t *testing.T, dir string) *bundle.Bundle {
	t.Helper()
	files := map[string][]byte{}
	for _, sub := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[sub+"/"+e.Name()] = data
		}
	}
	b, err := bundle.Load(files)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return b
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
