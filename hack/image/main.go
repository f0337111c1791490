// Command image builds the container image of Annex without Docker or any
// registry: FROM scratch, one layer holding the static annex binary, a CA
// bundle and a passwd entry for the non-root user it runs as. `make image`
// runs it:
//
//	go run ./hack/image --version 0.1.0 --binary linux/amd64=bin/image/linux-amd64/annex \
//	    --tag annex:0.1.0 --out bin/annex-image.tar
//
// --format docker (the default) writes a docker image archive of one
// platform, which `docker load`, `podman load`, `crane push`, `kind load
// image-archive` and `ctr images import` read. --format oci writes an OCI
// image layout folder whose index holds every --binary's platform, which
// `crane push --index`, `skopeo copy oci:` and `podman load` (after tar)
// read.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	var (
		o         Options
		binaries  multiFlag
		created   string
		tag       string
		out       string
		format    string
		caCertsIn string
	)
	flag.StringVar(&o.Version, "version", "", "Annex's version: label org.opencontainers.image.version (required)")
	flag.StringVar(&o.Revision, "revision", "", "the VCS revision: label org.opencontainers.image.revision")
	flag.StringVar(&o.Source, "source", "", "the source repository URL: label org.opencontainers.image.source")
	flag.Var(&binaries, "binary", "os/arch=path of a static annex binary for that platform (repeatable; docker format takes one)")
	flag.StringVar(&caCertsIn, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle copied to /etc/ssl/certs/ca-certificates.crt")
	flag.StringVar(&created, "created", "1970-01-01T00:00:00Z", "RFC 3339 time of the image and its files (the commit time keeps the image reproducible)")
	flag.StringVar(&tag, "tag", "", "the image reference written into the archive, e.g. annex:0.1.0 (required)")
	flag.StringVar(&out, "out", "", "the file (docker) or folder (oci) to write (required)")
	flag.StringVar(&format, "format", "docker", "docker: an image archive of one platform; oci: an OCI image layout folder with an index")
	flag.Parse()

	if err := run(o, binaries, caCertsIn, created, tag, out, format); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(o Options, binaries []string, caCertsPath, created, tag, out, format string) error {
	if tag == "" || out == "" {
		return fmt.Errorf("--tag and --out are required")
	}
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		return fmt.Errorf("--created %q: %w (want RFC 3339, e.g. 2026-01-02T15:04:05Z)", created, err)
	}
	o.Created = t
	if o.CACerts, err = os.ReadFile(caCertsPath); err != nil {
		return fmt.Errorf("--ca-certs: %w (install the ca-certificates package or pass another bundle)", err)
	}
	for _, b := range binaries {
		platform, path, ok := strings.Cut(b, "=")
		if !ok {
			return fmt.Errorf("--binary %q: want os/arch=path, e.g. linux/amd64=bin/image/linux-amd64/annex", b)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("--binary %s: %w", platform, err)
		}
		o.Binaries = append(o.Binaries, Binary{Platform: platform, Data: data})
	}
	switch format {
	case "docker":
		return WriteDockerArchive(out, tag, o)
	case "oci":
		return WriteOCILayout(out, tag, o)
	}
	return fmt.Errorf("--format %q: want docker or oci", format)
}

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
