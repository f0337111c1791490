package builtin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/charts"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/builtin"
	"github.com/annex-platform/annex/internal/catalog/sources"
	enginepkg "github.com/annex-platform/annex/internal/engine/pkg"
)

func TestIndex(t *testing.T) {
	index, err := builtin.Index("annex-builtin")
	if err != nil {
		t.Fatalf("Index: %v", err)
	}
	if len(index.Skipped) != 0 {
		t.Errorf("Skipped = %q, want none", index.Skipped)
	}

	type version struct {
		version, kubeVersion string
		deps                 []v1alpha1.Dependency
		schema               bool
	}
	want := map[string]struct {
		displayName string
		versions    []version
	}{
		"greetings-crd": {"Greetings CRD", []version{
			{version: "1.1.0", kubeVersion: ">=1.28.0-0"},
			{version: "1.0.0", kubeVersion: ">=1.28.0-0"},
		}},
		"hello": {"Hello", []version{
			{version: "0.2.0", kubeVersion: ">=1.37.0-0", deps: []v1alpha1.Dependency{{Name: "greetings-crd", Version: ">=1.1.0"}}, schema: true},
			{version: "0.1.0", deps: []v1alpha1.Dependency{{Name: "greetings-crd", Version: ">=1.0.0"}}, schema: true},
		}},
		"image-policy": {"Image policy", []version{{version: "0.1.0", schema: true}}},
		// Annex itself, a native extension at Annex's own release (charts/annex).
		"annex": {"Annex", []version{{version: annexChartVersion(t), kubeVersion: ">=1.36.0-0", schema: true}}},
		"motd":  {"Message of the day", []version{{version: "2.0.0", schema: true}, {version: "1.0.0", schema: true}}},
		// The rollouts walkthrough's: 1.2.0 never becomes Available.
		"beacon": {"Beacon", []version{{version: "1.2.0", schema: true}, {version: "1.1.0", schema: true}, {version: "1.0.0", schema: true}}},
	}
	var names []string
	for _, pkg := range index.Packages {
		if e := pkg.Spec.Versions[0].Engine; e == v1alpha1.EnginePackage || e == v1alpha1.EngineBundle {
			continue // TestIndexPackages, TestIndexOperators
		}
		names = append(names, pkg.Name)
		w, ok := want[pkg.Name]
		if !ok {
			t.Errorf("unexpected package %q", pkg.Name)
			continue
		}
		if pkg.Spec.DisplayName != w.displayName || pkg.Spec.Description == "" {
			t.Errorf("%s: displayName %q description %q, want %q and a description", pkg.Name, pkg.Spec.DisplayName, pkg.Spec.Description, w.displayName)
		}
		if len(pkg.Spec.Versions) != len(w.versions) {
			t.Errorf("%s: %d versions, want %d", pkg.Name, len(pkg.Spec.Versions), len(w.versions))
			continue
		}
		for i, v := range pkg.Spec.Versions {
			wv := w.versions[i]
			if v.Version != wv.version || v.KubeVersion != wv.kubeVersion || !reflect.DeepEqual(v.Dependencies, wv.deps) || (v.ValuesSchema != nil) != wv.schema {
				t.Errorf("%s version %d = %s %q deps %v schema %v, want %+v", pkg.Name, i, v.Version, v.KubeVersion, v.Dependencies, v.ValuesSchema != nil, wv)
			}
			wantSource := v1alpha1.ArtifactSource{Catalog: "annex-builtin", URL: "builtin://" + pkg.Name + "/" + v.Version, Digest: v.Source.Digest}
			if v.Source != wantSource || !strings.HasPrefix(v.Source.Digest, "sha256:") {
				t.Errorf("%s %s: source %+v, want %+v with a sha256 digest", pkg.Name, v.Version, v.Source, wantSource)
			}
		}
	}
	if got, wantNames := strings.Join(names, ","), strings.Join(slices.Sorted(maps.Keys(want)), ","); got != wantNames {
		t.Errorf("packages = %s, want %s", got, wantNames)
	}

	// The digest covers the content, not the name the catalog is given.
	other, err := builtin.Index("another-name")
	if err != nil {
		t.Fatal(err)
	}
	if other.Digest != index.Digest || !strings.HasPrefix(index.Digest, "sha256:") {
		t.Errorf("Digest %q for one name and %q for another, want the same sha256 digest", index.Digest, other.Digest)
	}
}

// annexChartVersion is the version in charts/annex/Chart.yaml, Annex's
// own release.
func annexChartVersion(t *testing.T) string {
	t.Helper()
	raw, err := fs.ReadFile(charts.Annex(), "Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Version string }
	if err := yaml.Unmarshal(raw, &meta); err != nil || meta.Version == "" {
		t.Fatalf("charts/annex/Chart.yaml: version %q, %v", meta.Version, err)
	}
	return meta.Version
}

// TestIndexPackages checks that every embedded package folder is one
// version of engine Package, with what its operator.yaml says: version,
// kubeVersion from kubernetesVersion, extends, and a built-in URL.
func TestIndexPackages(t *testing.T) {
	index, err := builtin.Index("annex-builtin")
	if err != nil {
		t.Fatal(err)
	}
	offered := map[string]v1alpha1.ExtensionVersion{}
	for _, p := range index.Packages {
		for _, v := range p.Spec.Versions {
			if v.Engine == v1alpha1.EnginePackage {
				offered[p.Name+" "+v.Version] = v
			}
		}
	}
	dirs, err := os.ReadDir("packages")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no built-in packages")
	}
	for _, d := range dirs {
		p, err := enginepkg.LoadDir(os.DirFS(filepath.Join("packages", d.Name())))
		if err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		op := p.Operator
		v, ok := offered[op.Name+" "+op.OperatorVersion]
		if !ok {
			t.Errorf("%s: %s %s is not in the index", d.Name(), op.Name, op.OperatorVersion)
			continue
		}
		delete(offered, op.Name+" "+op.OperatorVersion)
		want := v1alpha1.ExtensionVersion{
			Version:     op.OperatorVersion,
			AppVersion:  op.AppVersion,
			KubeVersion: ">=" + op.KubernetesVersion,
			Engine:      v1alpha1.EnginePackage,
			Source:      v1alpha1.ArtifactSource{Catalog: "annex-builtin", URL: "builtin://" + op.Name + "/" + op.OperatorVersion, Digest: v.Source.Digest},
		}
		if op.Extends != nil {
			if _, err := enginepkg.NormalizeOperator(&op); err != nil {
				t.Fatalf("%s: %v", d.Name(), err)
			}
			want.Extends = &v1alpha1.Dependency{Name: op.Extends.Operator, Version: op.Extends.Version}
		}
		if !reflect.DeepEqual(v, want) || !strings.HasPrefix(v.Source.Digest, "sha256:") {
			t.Errorf("%s: version\n%+v\nwant\n%+v with a sha256 digest", d.Name(), v, want)
		}
	}
	for k := range offered {
		t.Errorf("the index offers package %s, which no folder holds", k)
	}
}

// TestArchive checks that every archive is the same on every call and is
// the one Index's digest names, fetched the way an installation fetches it.
func TestArchive(t *testing.T) {
	index, err := builtin.Index("builtin")
	if err != nil {
		t.Fatal(err)
	}
	f := sources.Artifacts{Fetcher: &catalog.Fetcher{Builtin: builtin.Archive}}
	for _, pkg := range index.Packages {
		for _, v := range pkg.Spec.Versions {
			first, err := builtin.Archive(pkg.Name, v.Version)
			if err != nil {
				t.Fatalf("Archive(%s, %s): %v", pkg.Name, v.Version, err)
			}
			second, err := builtin.Archive(pkg.Name, v.Version)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first, second) {
				t.Errorf("%s %s: two calls return different bytes", pkg.Name, v.Version)
			}
			if v.Engine == v1alpha1.EngineBundle {
				continue // TestIndexOperators fetches bundles
			}
			fetched, err := f.FetchArtifact(context.Background(), v.Source)
			if err != nil {
				t.Errorf("%s %s: FetchArtifact: %v", pkg.Name, v.Version, err)
			} else if !bytes.Equal(fetched, first) {
				t.Errorf("%s %s: fetched bytes differ from Archive", pkg.Name, v.Version)
			}
			if v.Engine != v1alpha1.EnginePackage {
				continue
			}
			// The package engine reads what the catalog serves.
			p, err := enginepkg.LoadArchive(first)
			if err != nil {
				t.Errorf("%s %s: LoadArchive: %v", pkg.Name, v.Version, err)
			} else if p.Operator.Name != pkg.Name || p.Operator.OperatorVersion != v.Version {
				t.Errorf("%s %s: the archive holds %s %s", pkg.Name, v.Version, p.Operator.Name, p.Operator.OperatorVersion)
			}
		}
	}
}

func TestArchiveUnknown(t *testing.T) {
	tests := []struct {
		name, version, wantErr string
	}{
		// No such extension.
		{"nope", "1.0.0", `built-in catalog has no extension "nope"`},
		// Known extension, unknown version: the error lists what exists.
		{"hello", "9.9.9", `built-in extension "hello" has no version "9.9.9"; it has 0.1.0, 0.2.0`},
	}
	for _, tt := range tests {
		if _, err := builtin.Archive(tt.name, tt.version); err == nil || err.Error() != tt.wantErr {
			t.Errorf("Archive(%s, %s) error = %v, want %q", tt.name, tt.version, err, tt.wantErr)
		}
	}
}

// rendered is one object of a rendered chart.
type rendered struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       map[string]any `json:"spec"`
	Data       map[string]any `json:"data"`
}

// render loads a built-in archive with Helm's loader and renders it with
// Helm's engine as release "demo", checking values against the schema.
func render(t *testing.T, name, version string, values map[string]any) (map[string]rendered, error) {
	t.Helper()
	data, err := builtin.Archive(name, version)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("helm cannot load %s %s: %v", name, version, err)
	}
	if ch.Metadata.Name != name || ch.Metadata.Version != version || ch.Metadata.APIVersion != "v2" {
		t.Fatalf("Chart.yaml of %s %s says %s %s (apiVersion %s)", name, version, ch.Metadata.Name, ch.Metadata.Version, ch.Metadata.APIVersion)
	}
	if err := ch.Validate(); err != nil {
		t.Fatalf("%s %s: %v", name, version, err)
	}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, values, common.ReleaseOptions{Name: "demo", Namespace: "apps", IsInstall: true}, nil, false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		t.Fatalf("render %s %s: %v", name, version, err)
	}
	objects := map[string]rendered{}
	for file, manifest := range files {
		if strings.TrimSpace(manifest) == "" || strings.HasSuffix(file, ".tpl") || strings.HasSuffix(file, "NOTES.txt") {
			continue
		}
		var obj rendered
		if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil || strings.Contains(manifest, "\n---") {
			t.Fatalf("%s %s: %s is not one object: %v\n%s", name, version, file, err, manifest)
		}
		objName, _ := obj.Metadata["name"].(string)
		if obj.Kind == "" || objName == "" {
			t.Fatalf("%s %s: %s has no kind or name:\n%s", name, version, file, manifest)
		}
		objects[obj.Kind+"/"+objName] = obj
	}
	return objects, nil
}

func keys(m map[string]rendered) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, " ")
}

func TestGreetingsCRDRenders(t *testing.T) {
	for _, version := range []string{"1.0.0", "1.1.0"} {
		objects, err := render(t, "greetings-crd", version, nil)
		if err != nil {
			t.Fatal(err)
		}
		crd, ok := objects["CustomResourceDefinition/greetings.demo.annex.dev"]
		if !ok || len(objects) != 1 {
			t.Fatalf("%s renders %s, want only CustomResourceDefinition/greetings.demo.annex.dev", version, keys(objects))
		}
		raw, _ := json.Marshal(crd.Spec)
		hasLanguage := strings.Contains(string(raw), `"language"`)
		if hasLanguage != (version == "1.1.0") || crd.Spec["scope"] != "Namespaced" {
			t.Errorf("%s: scope %v, spec.language in schema = %v; want Namespaced and language only in 1.1.0", version, crd.Spec["scope"], hasLanguage)
		}
	}
}

func TestHelloRenders(t *testing.T) {
	wantObjects := "ConfigMap/demo Deployment/demo Greeting/demo Service/demo ServiceAccount/demo"
	tests := []struct {
		version      string
		values       map[string]any
		wantMessage  string
		wantLanguage string // "" when the version has no language
		wantReplicas float64
	}{
		// Defaults: two replicas, which annex dev's fake nodes run.
		{version: "0.1.0", wantMessage: "Hello from Annex", wantReplicas: 2},
		// Values reach the ConfigMap, the Greeting and the Deployment.
		{version: "0.1.0", values: map[string]any{"message": "Hoi", "replicas": 0}, wantMessage: "Hoi", wantReplicas: 0},
		// 0.2.0 adds the language, visible after an upgrade.
		{version: "0.2.0", wantMessage: "Hello from Annex", wantLanguage: "en", wantReplicas: 2},
		// The language is a value like the others.
		{version: "0.2.0", values: map[string]any{"language": "nl"}, wantMessage: "Hello from Annex", wantLanguage: "nl", wantReplicas: 2},
	}
	for _, tt := range tests {
		objects, err := render(t, "hello", tt.version, tt.values)
		if err != nil {
			t.Fatalf("%s %v: %v", tt.version, tt.values, err)
		}
		if got := keys(objects); got != wantObjects {
			t.Fatalf("%s renders %s, want %s", tt.version, got, wantObjects)
		}
		cm, greeting, deploy := objects["ConfigMap/demo"], objects["Greeting/demo"], objects["Deployment/demo"]
		if cm.Data["message"] != tt.wantMessage || greeting.Spec["message"] != tt.wantMessage {
			t.Errorf("%s: message %v in ConfigMap, %v in Greeting, want %q", tt.version, cm.Data["message"], greeting.Spec["message"], tt.wantMessage)
		}
		if lang, _ := cm.Data["language"].(string); lang != tt.wantLanguage || greeting.Spec["language"] != cm.Data["language"] {
			t.Errorf("%s: language %v in ConfigMap, %v in Greeting, want %q", tt.version, cm.Data["language"], greeting.Spec["language"], tt.wantLanguage)
		}
		if deploy.Spec["replicas"] != tt.wantReplicas || greeting.Spec["replicas"] != tt.wantReplicas {
			t.Errorf("%s: replicas %v in Deployment, %v in Greeting, want %v", tt.version, deploy.Spec["replicas"], greeting.Spec["replicas"], tt.wantReplicas)
		}
		if greeting.APIVersion != "demo.annex.dev/v1" {
			t.Errorf("%s: Greeting apiVersion %q", tt.version, greeting.APIVersion)
		}
		if svc := objects["Service/demo"]; svc.Spec["type"] != "ClusterIP" {
			t.Errorf("%s: Service type %v, want ClusterIP", tt.version, svc.Spec["type"])
		}
	}
}

// TestImagePolicyRenders: the image-policy extension is one Hook whose
// annotations carry the policy and whose spec the values shape.
func TestImagePolicyRenders(t *testing.T) {
	objects, err := render(t, "image-policy", "0.1.0", map[string]any{
		"allowedRegistries": []any{"ghcr.io", "registry.k8s.io"}, "requireDigest": true,
		"selector": map[string]any{"extensions": []any{"podinfo"}}, "failurePolicy": "Ignore",
	})
	if err != nil {
		t.Fatal(err)
	}
	hook, ok := objects["Hook/demo"]
	if !ok || len(objects) != 1 || hook.APIVersion != "annex.dev/v1alpha1" {
		t.Fatalf("renders %s, want only Hook/demo of annex.dev/v1alpha1", keys(objects))
	}
	annotations, _ := hook.Metadata["annotations"].(map[string]any)
	if annotations["imagepolicy.annex.dev/allowed-registries"] != "ghcr.io,registry.k8s.io" || annotations["imagepolicy.annex.dev/require-digest"] != "true" {
		t.Errorf("annotations %v", annotations)
	}
	sel, _ := hook.Spec["selector"].(map[string]any)
	if fmt.Sprint(sel["extensions"]) != "[podinfo]" || hook.Spec["failurePolicy"] != "Ignore" || hook.Spec["timeout"] != "2m" {
		t.Errorf("spec %v", hook.Spec)
	}
	if _, err := render(t, "image-policy", "0.1.0", map[string]any{"failurePolicy": "Sometimes"}); err == nil {
		t.Error("the values schema accepts failurePolicy Sometimes")
	}
}

func TestHelloValuesSchema(t *testing.T) {
	tests := []struct {
		values  map[string]any
		wantErr string
	}{
		// An empty message is refused.
		{map[string]any{"message": ""}, "message"},
		// Negative replicas are refused.
		{map[string]any{"replicas": -1}, "replicas"},
		// Replicas must be a whole number.
		{map[string]any{"replicas": "two"}, "replicas"},
		// A null message removes the default, and message is required.
		{map[string]any{"message": nil}, "message"},
	}
	for _, version := range []string{"0.1.0", "0.2.0"} {
		for _, tt := range tests {
			if _, err := render(t, "hello", version, tt.values); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s with %v: error = %v, want a schema error about %s", version, tt.values, err, tt.wantErr)
			}
		}
	}
}
