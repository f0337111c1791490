package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary cross-builds a small Go program for linux/arch with
// CGO_ENABLED=0, as `make image` builds annex.
func staticBinary(t *testing.T, arch string) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/hi\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", "hi", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build for %s: %v\n%s", arch, err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func options(binaries ...Binary) Options {
	return Options{
		Version: "1.2.3", Revision: "abc123", Source: "https://example.com/annex",
		Created:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		CACerts:  []byte("-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"),
		Binaries: binaries,
	}
}

// TestDockerArchive writes an image archive and reads it back as a
// runtime would: config, labels, and the files of its one layer.
func TestDockerArchive(t *testing.T) {
	bin := staticBinary(t, "amd64")
	o := options(Binary{Platform: "linux/amd64", Data: bin})
	path := filepath.Join(t.TempDir(), "annex-image.tar")
	if err := WriteDockerArchive(path, "annex:1.2.3", o); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("annex:1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("reading the archive back: %v", err)
	}
	checkImage(t, img, o, "amd64")

	// The same inputs give the same image.
	again := filepath.Join(t.TempDir(), "again.tar")
	if err := WriteDockerArchive(again, "annex:1.2.3", o); err != nil {
		t.Fatal(err)
	}
	img2, err := tarball.ImageFromPath(again, &tag)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := img2.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same inputs: digests %s and %s", d1, d2)
	}
}

// TestOCILayout writes amd64 and arm64 into one OCI image layout and reads
// each platform's image back from its index.
func TestOCILayout(t *testing.T) {
	o := options(
		Binary{Platform: "linux/amd64", Data: staticBinary(t, "amd64")},
		Binary{Platform: "linux/arm64", Data: staticBinary(t, "arm64")},
	)
	dir := filepath.Join(t.TempDir(), "annex-image")
	if err := WriteOCILayout(dir, "annex:1.2.3", o); err != nil {
		t.Fatal(err)
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 || topManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "annex:1.2.3" {
		t.Fatalf("index.json = %+v, want one image index named annex:1.2.3", topManifest.Manifests)
	}
	idx, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for i, desc := range m.Manifests {
		platforms = append(platforms, desc.Platform.String())
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, img, o, o.Binaries[i].Platform[len("linux/"):])
	}
	if got := strings.Join(platforms, ","); got != "linux/amd64,linux/arm64" {
		t.Errorf("platforms %s, want linux/amd64,linux/arm64", got)
	}
}

// checkImage asserts what the chart and a kubelet rely on.
func checkImage(t *testing.T, img v1.Image, o Options, arch string) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != arch {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
	}
	if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/annex"}) || !reflect.DeepEqual(cf.Config.Cmd, []string{"manager"}) {
		t.Errorf("entrypoint %q cmd %q, want [/annex] [manager]", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (non-root)", cf.Config.User)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.version":  "1.2.3",
		"org.opencontainers.image.revision": "abc123",
		"org.opencontainers.image.source":   "https://example.com/annex",
		"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
		"org.opencontainers.image.title":    "annex",
	}
	for k, v := range wantLabels {
		if cf.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], v)
		}
	}

	var got imageFiles
	files := map[string]*tar.Header{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch h.Name {
		case "annex":
			got.data = data
		case "etc/passwd":
			got.passwd = string(data)
		case "etc/ssl/certs/ca-certificates.crt":
			got.certs = data
		}
	}
	for _, b := range o.Binaries {
		if strings.HasSuffix(b.Platform, "/"+arch) && !bytes.Equal(got.data, b.Data) {
			t.Errorf("/annex differs from the %s binary", b.Platform)
		}
	}
	if h := files["annex"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("/annex is missing or not executable: %+v", h)
	}
	if !strings.Contains(got.passwd, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user 65532:\n%s", got.passwd)
	}
	if !bytes.Equal(got.certs, o.CACerts) {
		t.Errorf("/etc/ssl/certs/ca-certificates.crt differs from the CA bundle")
	}
	if h := files["home/nonroot"]; h == nil || h.Uid != 65532 {
		t.Errorf("/home/nonroot is missing or not owned by 65532: %+v", h)
	}
	if h := files["tmp"]; h == nil || h.Mode&0o1777 != 0o1777 {
		t.Errorf("/tmp is missing or not 1777: %+v", h)
	}
}

// imageFiles holds the files checkImage reads.
type imageFiles struct {
	data, certs []byte
	passwd      string
}

// TestBuildRefuses: what would not run in an image without libc, or
// without a version, is refused with a fix.
func TestBuildRefuses(t *testing.T) {
	arm := staticBinary(t, "arm64")
	// A dynamically linked program of this machine: the shell.
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(sh))
	if err != nil {
		t.Fatal(err)
	}
	var shArch string
	for arch, m := range elfMachines {
		if m == f.Machine {
			shArch = arch
		}
	}
	tests := []struct {
		name    string
		o       Options
		wantErr string
	}{
		// An arm64 binary declared as amd64.
		{"wrong architecture", options(Binary{Platform: "linux/amd64", Data: arm}), "built for EM_AARCH64, not amd64; build it with GOARCH=amd64"},
		// Not an executable at all.
		{"not ELF", options(Binary{Platform: "linux/arm64", Data: []byte("#!/bin/sh\n")}), "not an ELF executable"},
		// A binary that needs a dynamic loader.
		{"dynamic", options(Binary{Platform: "linux/" + shArch, Data: sh}), "dynamically linked, but the image has no libc; build it with CGO_ENABLED=0"},
		// The version label is required.
		{"no version", func() Options { o := options(Binary{Platform: "linux/arm64", Data: arm}); o.Version = ""; return o }(), "the version is required"},
		// A platform without an architecture.
		{"bad platform", options(Binary{Platform: "linux", Data: arm}), `platform "linux": want os/arch`},
	}
	for _, tt := range tests {
		if _, err := Build(tt.o); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
		}
	}
	if err := WriteDockerArchive(filepath.Join(t.TempDir(), "x.tar"), "annex:1", options(
		Binary{Platform: "linux/arm64", Data: arm}, Binary{Platform: "linux/arm64", Data: arm})); err == nil || !strings.Contains(err.Error(), "use --format oci") {
		t.Errorf("a docker archive of two binaries: error %v, want one pointing to --format oci", err)
	}
}
