package catalog

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// PackageOperatorFile is the file that makes a folder or an archive an
// Annex (KUDO) package: operator.yaml at its root.
const PackageOperatorFile = "operator.yaml"

// ChartArchive packs a chart's files into a .tgz the way `helm package`
// lays it out: every file under the folder chartName/. files maps a path
// inside the chart ("Chart.yaml", "templates/cm.yaml") to its content.
//
// The bytes depend only on the arguments (and the Go version's gzip
// encoder): entries are sorted, modes are 0644, owners and mtimes are zero.
// That keeps the digest of a built-in chart stable from one build to the next.
// It refuses paths that are absolute, not clean, or leave the chart folder.
func ChartArchive(chartName string, files map[string][]byte) ([]byte, error) {
	if chartName == "" || strings.ContainsAny(chartName, `/\`) || chartName == "." || chartName == ".." {
		return nil, fmt.Errorf("chart name %q: must be a non-empty name without slashes", chartName)
	}
	return writeArchive("chart "+strconv.Quote(chartName), chartName+"/", files)
}

// PackageArchive packs a package's files into a .tgz laid out as KUDO packs
// one (`kubectl kudo package create`): operator.yaml, params.yaml and
// templates/ at the root of the archive, no enclosing folder. files maps a
// path inside the package ("operator.yaml", "templates/deploy.yaml") to its
// content and must hold operator.yaml.
//
// Like ChartArchive, the bytes depend only on files (sorted entries, mode
// 0644, zero owners and mtimes), so a package folder has one digest
// wherever it is packed: by a directory catalog, the built-in catalog or
// `annexctl package`. It refuses paths that are absolute or not clean.
func PackageArchive(files map[string][]byte) ([]byte, error) {
	if _, ok := files[PackageOperatorFile]; !ok {
		return nil, fmt.Errorf("package has no %s; a package folder holds operator.yaml, params.yaml and templates/", PackageOperatorFile)
	}
	return writeArchive("package", "", files)
}

// BundleArchive packs an OLM registry+v1 bundle's files into a .tgz with
// manifests/ and metadata/ at its root, as a bundle image's layer holds
// them. files maps "manifests/<file>" and "metadata/<file>" to their
// content and must hold metadata/annotations.yaml. Like ChartArchive, the
// bytes depend only on files. It refuses paths that are absolute or not
// clean.
func BundleArchive(files map[string][]byte) ([]byte, error) {
	const annotations = "metadata/annotations.yaml"
	if _, ok := files[annotations]; !ok {
		return nil, fmt.Errorf("bundle has no %s; a registry+v1 bundle holds manifests/ and %[1]s", annotations)
	}
	return writeArchive("bundle", "", files)
}

// writeArchive writes files, each under prefix, as a deterministic .tgz;
// what names the archive in errors.
func writeArchive(what, prefix string, files map[string][]byte) ([]byte, error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, `\`) {
			return nil, fmt.Errorf("%s: file path %q must be a clean relative path with forward slashes", what, p)
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, p := range paths {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     prefix + p,
			Mode:     0o644,
			Size:     int64(len(files[p])),
			ModTime:  time.Unix(0, 0),
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", what, p, err)
		}
		if _, err := tw.Write(files[p]); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", what, p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return buf.Bytes(), nil
}
