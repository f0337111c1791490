package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's layout. The manager runs as the non-root user of
// distroless images (65532), so that a Pod's runAsNonRoot holds without
// a runAsUser.
const (
	BinaryPath  = "/annex"
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	UID         = 65532
	HomeDir     = "/home/nonroot"
	User        = "65532:65532"
)

// Options describe one image build.
type Options struct {
	// Version, Revision and Source become the OCI labels
	// org.opencontainers.image.{version,revision,source}; Version is
	// required.
	Version, Revision, Source string
	// Created is the image's creation time and every file's mtime: the
	// same inputs give the same image digest.
	Created time.Time
	// CACerts is the CA bundle at CACertsPath, which the manager's TLS
	// clients (catalogs, registries) read.
	CACerts []byte
	// Binaries are the static annex binaries, one image per platform.
	Binaries []Binary
}

// Binary is the annex binary of one platform.
type Binary struct {
	// Platform is "os/arch", e.g. "linux/amd64".
	Platform string
	// Data is the binary: a statically linked ELF of Platform
	// (CGO_ENABLED=0), since the image has no libc.
	Data []byte
}

// Build returns one image per binary, in the order of o.Binaries. An
// error names the binary and what is wrong with it (not static, another
// architecture) or the missing option.
func Build(o Options) ([]v1.Image, error) {
	if o.Version == "" {
		return nil, fmt.Errorf("the version is required (label org.opencontainers.image.version)")
	}
	if len(o.CACerts) == 0 {
		return nil, fmt.Errorf("the CA bundle is empty")
	}
	if len(o.Binaries) == 0 {
		return nil, fmt.Errorf("no binary: pass at least one os/arch=path")
	}
	var images []v1.Image
	for _, b := range o.Binaries {
		p, err := v1.ParsePlatform(b.Platform)
		if err != nil || p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("platform %q: want os/arch, e.g. linux/amd64", b.Platform)
		}
		if err := checkStatic(b.Data, *p); err != nil {
			return nil, fmt.Errorf("binary for %s: %w", b.Platform, err)
		}
		img, err := buildOne(o, b.Data, *p)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", b.Platform, err)
		}
		images = append(images, img)
	}
	return images, nil
}

// buildOne puts the one layer onto an empty OCI image and sets its config.
func buildOne(o Options, binary []byte, p v1.Platform) (v1.Image, error) {
	layerTar, err := rootfs(o, binary)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: o.Created}, CreatedBy: "hack/image: annex " + o.Version,
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: o.Created}
	labels := map[string]string{
		"org.opencontainers.image.title":       "annex",
		"org.opencontainers.image.description": "Annex, a Kubernetes-native platform-extension manager",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.created":     o.Created.UTC().Format(time.RFC3339),
	}
	if o.Revision != "" {
		labels["org.opencontainers.image.revision"] = o.Revision
	}
	if o.Source != "" {
		labels["org.opencontainers.image.source"] = o.Source
	}
	cf.Config = v1.Config{
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"manager"},
		User:       User,
		WorkingDir: HomeDir,
		Env: []string{
			"PATH=/",
			"HOME=" + HomeDir,
			"SSL_CERT_FILE=" + CACertsPath,
		},
		Labels: labels,
	}
	return mutate.ConfigFile(img, cf)
}

// file is one entry of the image's root file system.
type file struct {
	name string
	mode int64
	uid  int
	data []byte
	dir  bool
}

// rootfs is the tar of the image's only layer: entries in a fixed order,
// every mtime o.Created, so that the same inputs give the same bytes.
func rootfs(o Options, binary []byte) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", UID, UID, HomeDir)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID)
	files := []file{
		{name: "annex", mode: 0o755, data: binary},
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: o.CACerts},
		{name: "home/", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(HomeDir, "/") + "/", mode: 0o700, uid: UID, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: o.Created,
			Typeflag: tar.TypeReg, Size: int64(len(f.data)), Format: tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// elfMachines maps GOARCH names to ELF machines.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// checkStatic refuses what would not run in an image without libc: a
// binary that is not an ELF of p's architecture, or one that asks for a
// dynamic loader.
func checkStatic(data []byte, p v1.Platform) error {
	if p.OS != "linux" {
		return fmt.Errorf("the image runs on linux, not %s", p.OS)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF executable (%v); build it with GOOS=linux GOARCH=%s CGO_ENABLED=0", err, p.Architecture)
	}
	defer f.Close()
	want, ok := elfMachines[p.Architecture]
	if !ok {
		return fmt.Errorf("unknown architecture %q", p.Architecture)
	}
	if f.Machine != want {
		return fmt.Errorf("built for %s, not %s; build it with GOARCH=%s", f.Machine, p.Architecture, p.Architecture)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked, but the image has no libc; build it with CGO_ENABLED=0")
		}
	}
	return nil
}

// WriteDockerArchive builds the image of the one binary in o and writes it
// to path as a docker image archive (`docker save` format) naming it tag.
func WriteDockerArchive(path, tag string, o Options) error {
	if len(o.Binaries) != 1 {
		return fmt.Errorf("a docker archive holds one platform, got %d binaries; use --format oci for several", len(o.Binaries))
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("--tag %q: %w", tag, err)
	}
	images, err := Build(o)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(path, ref, images[0])
}

// WriteOCILayout builds one image per binary and writes them to the folder
// dir (replaced if it exists) as an OCI image layout whose index.json
// names one image index, annotated with tag, holding every platform.
func WriteOCILayout(dir, tag string, o Options) error {
	if _, err := name.NewTag(tag); err != nil {
		return fmt.Errorf("--tag %q: %w", tag, err)
	}
	images, err := Build(o)
	if err != nil {
		return err
	}
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, img := range images {
		p, _ := v1.ParsePlatform(o.Binaries[i].Platform) // checked by Build
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return l.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag}))
}
