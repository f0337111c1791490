package catalog_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/annex-platform/annex/internal/catalog"
)

func TestChartArchive(t *testing.T) {
	files := map[string][]byte{
		"Chart.yaml":             []byte("apiVersion: v2\nname: demo\nversion: 0.1.0\n"),
		"values.yaml":            []byte("a: 1\n"),
		"templates/_helpers.tpl": []byte(`{{- define "demo.name" -}}demo{{- end -}}`),
		"templates/cm.yaml":      []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"demo.name\" . }}\n"),
	}
	first, err := catalog.ChartArchive("demo", files)
	if err != nil {
		t.Fatal(err)
	}
	second, err := catalog.ChartArchive("demo", files)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatal("two archives of the same files differ")
	}

	// Entries are sorted, under demo/, with zero owners and the epoch as mtime.
	zr, err := gzip.NewReader(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.ModTime.Unix() != 0 || hdr.Uid != 0 || hdr.Gid != 0 || hdr.Mode != 0o644 {
			t.Errorf("%s: mtime %v uid %d gid %d mode %o, want zero values and 0644", hdr.Name, hdr.ModTime, hdr.Uid, hdr.Gid, hdr.Mode)
		}
		names = append(names, hdr.Name)
	}
	want := "demo/Chart.yaml demo/templates/_helpers.tpl demo/templates/cm.yaml demo/values.yaml"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("entries = %s, want %s", got, want)
	}

	// Helm loads it as a chart.
	ch, err := loader.LoadArchive(bytes.NewReader(first))
	if err != nil {
		t.Fatalf("helm cannot load the archive: %v", err)
	}
	if ch.Metadata.Name != "demo" || len(ch.Templates) != 2 {
		t.Errorf("helm loaded %s with %d templates, want demo with 2", ch.Metadata.Name, len(ch.Templates))
	}
}

func TestChartArchiveRefusesBadPaths(t *testing.T) {
	tests := []struct {
		chart, path string
	}{
		{"demo", "../escape.yaml"},      // leaves the chart folder
		{"demo", "/etc/passwd"},         // absolute
		{"demo", "templates/../x.yaml"}, // not clean
		{"demo", `templates\x.yaml`},    // backslash
		{"demo", ""},                    // empty
		{"../demo", "Chart.yaml"},       // chart name with a slash
		{"", "Chart.yaml"},              // no chart name
	}
	for _, tt := range tests {
		if _, err := catalog.ChartArchive(tt.chart, map[string][]byte{tt.path: []byte("x")}); err == nil {
			t.Errorf("ChartArchive(%q, {%q}) succeeded, want an error", tt.chart, tt.path)
		}
	}
}
