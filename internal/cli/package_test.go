package cli_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/directory"
	"github.com/annex-platform/annex/internal/catalog/helm"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/engine/pkg"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with what the code prints")

// The test packages: greeter, and greeter-loud, which extends it.
var (
	greeter     = filepath.Join("testdata", "packages", "greeter")
	greeterLoud = filepath.Join("testdata", "packages", "greeter-loud")
)

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (review, then go test -update):\n%s", p, got)
	}
}

// copyDir copies a test package into a temporary folder to change it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestPackageLint(t *testing.T) {
	// A clean package prints nothing and passes.
	var out bytes.Buffer
	if err := cli.PackageLint(cli.PackageLintOptions{Dir: greeter, Out: &out}); err != nil || out.Len() != 0 {
		t.Fatalf("lint greeter: %v\n%s", err, out.String())
	}

	// An extension's references to its base are warnings: it passes.
	out.Reset()
	if err := cli.PackageLint(cli.PackageLintOptions{Dir: greeterLoud, Out: &out}); err != nil {
		t.Fatalf("lint greeter-loud: %v", err)
	}
	if want := filepath.Join(greeterLoud, "operator.yaml") + ":22: warning: plan deploy, step \"config\" names task \"config\""; !strings.Contains(out.String(), want) {
		t.Errorf("lint greeter-loud printed:\n%s\nwant a line starting %q", out.String(), want)
	}

	// An error fails, after every problem is printed as file:line: severity: message.
	broken := copyDir(t, greeter)
	op := filepath.Join(broken, "operator.yaml")
	data, err := os.ReadFile(op)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(op, bytes.Replace(data, []byte("tasks: [app]"), []byte("tasks: [ap]"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = cli.PackageLint(cli.PackageLintOptions{Dir: broken, Out: &out})
	if !errors.Is(err, cli.ErrLintFailed) {
		t.Fatalf("lint of a broken package: %v, want ErrLintFailed", err)
	}
	if want := op + ":26: error: "; !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), `"ap"`) {
		t.Errorf("lint printed:\n%s\nwant a line starting %q about task \"ap\"", out.String(), want)
	}
}

func TestPackageRender(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("REPLICAS: 2\nBANNER: from the file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    cli.PackageRenderOptions
		golden  string // the expected output, when the render succeeds
		wantErr string
	}{
		// A package that extends nothing renders alone, with its defaults.
		{name: "greeter", opts: cli.PackageRenderOptions{Dir: greeter}, golden: "render/greeter.yaml"},
		// An extension merged onto its base; --set wins over --values; the
		// instance and namespace reach the templates.
		{name: "extension", golden: "render/greeter-loud.yaml", opts: cli.PackageRenderOptions{
			Dir: greeterLoud, Bases: []string{greeter}, ValuesFile: values, Set: []string{"REPLICAS=3"}, Instance: "hi", Namespace: "apps",
		}},
		// Only the merged package.
		{name: "merged only", golden: "render/greeter-loud-merged.yaml", opts: cli.PackageRenderOptions{Dir: greeterLoud, Bases: []string{greeter}, MergedOnly: true}},
		// Without its base, the error says which flag supplies it.
		{name: "missing base", opts: cli.PackageRenderOptions{Dir: greeterLoud},
			wantErr: "greeter-loud extends greeter >=1.0.0 <2.0.0 (operator.yaml extends); pass the base package's folder with --base DIR"},
		// A --base that is no folder says so.
		{name: "missing base folder", opts: cli.PackageRenderOptions{Dir: greeterLoud, Bases: []string{greeter + "-nope"}},
			wantErr: "--base: stat " + greeter + "-nope: no such file or directory"},
		// An unknown plan names those that exist.
		{name: "unknown plan", opts: cli.PackageRenderOptions{Dir: greeter, Plan: "upgrade"}, wantErr: `package greeter has no plan "upgrade"; its plans are deploy`},
		// Parameters are checked against params.yaml.
		{name: "bad parameter", opts: cli.PackageRenderOptions{Dir: greeter, Set: []string{"REPLICAS=many"}}, wantErr: "parameter REPLICAS: must be an integer"},
		{name: "unknown parameter", opts: cli.PackageRenderOptions{Dir: greeter, Set: []string{"COLOR=red"}}, wantErr: "COLOR"},
		{name: "bad --set", opts: cli.PackageRenderOptions{Dir: greeter, Set: []string{"REPLICAS"}}, wantErr: `--set "REPLICAS": use NAME=VALUE`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, warnings bytes.Buffer
			o := tt.opts
			o.Out, o.Warnings = &out, &warnings
			err := cli.PackageRender(o)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if warnings.Len() > 0 {
				t.Errorf("warnings:\n%s", warnings.String())
			}
			golden(t, tt.golden, out.Bytes())
		})
	}
}

func TestPackageRenderBaseVersion(t *testing.T) {
	old := copyDir(t, greeter)
	op := filepath.Join(old, "operator.yaml")
	data, err := os.ReadFile(op)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(op, bytes.Replace(data, []byte("operatorVersion: 1.0.0"), []byte("operatorVersion: 0.9.0"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	err = cli.PackageRender(cli.PackageRenderOptions{Dir: greeterLoud, Bases: []string{old}, Out: io.Discard})
	want := `greeter-loud extends greeter >=1.0.0 <2.0.0, but --base gives greeter 0.9.0; pass a base whose operatorVersion or appVersion matches ">=1.0.0 <2.0.0"`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
	// Of two bases that fit, the higher is used.
	var out bytes.Buffer
	if err := cli.PackageRender(cli.PackageRenderOptions{Dir: greeterLoud, Bases: []string{old, greeter}, MergedOnly: true, Out: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "# Package greeter-loud 0.1.0, merged onto greeter 1.0.0\n") {
		t.Errorf("output starts:\n%.80s", out.String())
	}
}

// TestPackageAndIndex packs two versions into a repository folder with an
// index and reads it back the way a Helm-kind Catalog does.
func TestPackageAndIndex(t *testing.T) {
	repo := t.TempDir()
	second := copyDir(t, greeter)
	op := filepath.Join(second, "operator.yaml")
	data, err := os.ReadFile(op)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(op, bytes.Replace(data, []byte("operatorVersion: 1.0.0"), []byte("operatorVersion: 1.1.0"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, dir := range []string{greeter, second, greeterLoud} {
		if _, err := cli.Package(cli.PackageOptions{Dir: dir, Destination: repo, Index: true, Out: &out}); err != nil {
			t.Fatalf("package %s: %v", dir, err)
		}
	}
	first, err := os.ReadFile(filepath.Join(repo, "greeter-1.0.0.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	// The same folder gives the same bytes, those a directory catalog serves.
	again, err := cli.Package(cli.PackageOptions{Dir: greeter, Destination: t.TempDir(), Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(again); !bytes.Equal(b, first) {
		t.Error("packing the same folder twice gives different bytes")
	}
	if folder, err := directory.PackPackageFolder(greeter, catalog.Limits{}); err != nil || !bytes.Equal(folder, first) {
		t.Errorf("a directory catalog packs the folder differently (%v)", err)
	}
	if p, err := pkg.LoadArchive(first); err != nil || p.Operator.Name != "greeter" {
		t.Errorf("the package engine reads %v, %v", p, err)
	}
	if !strings.Contains(out.String(), "wrote "+filepath.Join(repo, "greeter-1.0.0.tgz")+" (sha256:") || !strings.Contains(out.String(), "wrote "+filepath.Join(repo, "index.yaml")) {
		t.Errorf("output:\n%s", out.String())
	}

	raw, err := os.ReadFile(filepath.Join(repo, "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	index, err := helm.ParseIndex(raw, "https://packages.example.com/repo", "repo")
	if err != nil {
		t.Fatal(err)
	}
	if len(index.Skipped) != 0 || len(index.Packages) != 2 {
		t.Fatalf("index.yaml:\n%s\nparsed: %+v", raw, index)
	}
	g, loud := index.Packages[0], index.Packages[1]
	if len(g.Spec.Versions) != 2 || g.Spec.Versions[0].Version != "1.1.0" || g.Spec.Versions[1].Version != "1.0.0" {
		t.Fatalf("greeter versions = %+v", g.Spec.Versions)
	}
	v := g.Spec.Versions[1]
	want := v1alpha1.ExtensionVersion{
		Version: "1.0.0", AppVersion: "2.1", KubeVersion: ">=1.30.0", Engine: v1alpha1.EnginePackage,
		Source: v1alpha1.ArtifactSource{Catalog: "repo", URL: "https://packages.example.com/repo/greeter-1.0.0.tgz", Digest: catalog.Digest(first)},
	}
	if v.Version != want.Version || v.AppVersion != want.AppVersion || v.KubeVersion != want.KubeVersion || v.Engine != want.Engine || v.Source != want.Source {
		t.Errorf("greeter 1.0.0 = %+v\nwant %+v", v, want)
	}
	if x := loud.Spec.Versions[0].Extends; x == nil || *x != (v1alpha1.Dependency{Name: "greeter", Version: ">=1.0.0 <2.0.0"}) {
		t.Errorf("greeter-loud extends %+v", x)
	}

	// A package with lint errors is not packed.
	broken := copyDir(t, greeter)
	if err := os.Remove(filepath.Join(broken, "templates", "deployment.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Package(cli.PackageOptions{Dir: broken, Destination: t.TempDir(), Out: io.Discard}); err == nil || !strings.Contains(err.Error(), "run `annexctl package lint") {
		t.Errorf("packing a broken package: %v", err)
	}
}

// TestPush pushes a folder and an archive to an in-process registry and
// lists them through an OCI-kind catalog.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	archive, err := cli.Package(cli.PackageOptions{Dir: greeter, Destination: t.TempDir(), Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, src := range []string{archive, greeterLoud} {
		if err := cli.Push(ctx, cli.PushOptions{Source: src, Destination: "oci://" + host + "/packages", PlainHTTP: true, Out: &out}); err != nil {
			t.Fatalf("push %s: %v", src, err)
		}
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "pushed oci://"+host+"/packages/greeter@sha256:") {
		t.Errorf("output:\n%s", out.String())
	}

	cat := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OCI: &v1alpha1.OCISource{Repository: "oci://" + host + "/packages"}}}}
	cat.Name = "oci"
	f := &catalog.Fetcher{}
	index, err := (&sources.Catalogs{Fetcher: f}).Index(ctx, cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(index.Packages) != 2 || len(index.Skipped) != 0 {
		t.Fatalf("index = %+v", index)
	}
	v := index.Packages[0].Spec.Versions[0]
	if index.Packages[0].Name != "greeter" || v.Version != "1.0.0" || v.Engine != v1alpha1.EnginePackage || v.KubeVersion != ">=1.30.0" {
		t.Errorf("greeter = %+v", index.Packages[0])
	}
	fetched, err := sources.Artifacts{Fetcher: f}.FetchArtifact(ctx, v.Source)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := os.ReadFile(archive); !bytes.Equal(fetched, want) {
		t.Error("the fetched artifact differs from the pushed archive")
	}
	if x := index.Packages[1].Spec.Versions[0].Extends; x == nil || x.Name != "greeter" {
		t.Errorf("greeter-loud extends %+v", x)
	}

	// Plain HTTP is for this machine only.
	err = cli.Push(ctx, cli.PushOptions{Source: greeter, Destination: "oci://registry.example.com/packages", PlainHTTP: true, Out: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "plain HTTP is only for a registry on this machine") {
		t.Errorf("push over plain HTTP to another host: %v", err)
	}
	// A file that is no package archive is refused before the registry.
	junk := filepath.Join(t.TempDir(), "junk.tgz")
	if err := os.WriteFile(junk, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cli.Push(ctx, cli.PushOptions{Source: junk, Destination: "oci://" + host + "/packages", PlainHTTP: true, Out: io.Discard}); err == nil || !strings.Contains(err.Error(), "not gzip-compressed") {
		t.Errorf("push of junk: %v", err)
	}
}
