package catalog

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"
)

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
	paths := make([]string, 0, len(files))
	for p := range files {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, `\`) {
			return nil, fmt.Errorf("chart %q: file path %q must be a clean relative path with forward slashes", chartName, p)
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
			Name:     chartName + "/" + p,
			Mode:     0o644,
			Size:     int64(len(files[p])),
			ModTime:  time.Unix(0, 0),
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("chart %q: %s: %w", chartName, p, err)
		}
		if _, err := tw.Write(files[p]); err != nil {
			return nil, fmt.Errorf("chart %q: %s: %w", chartName, p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("chart %q: %w", chartName, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("chart %q: %w", chartName, err)
	}
	return buf.Bytes(), nil
}
