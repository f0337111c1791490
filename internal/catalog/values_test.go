package catalog_test

import (
	"archive/tar"
	"errors"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
)

// ReadChartValues returns a chart's own values schema and values.yaml as
// JSON, after the archive checks, and says which file is wrong.
func TestReadChartValues(t *testing.T) {
	big := strings.Repeat("x", catalog.MaxValuesBytes)
	cases := []struct {
		name             string
		archive          []byte
		schema, defaults string
		err              string // a part of the error; "" for none
		unsafe           bool   // the error is an *UnsafeArchiveError
	}{
		// Both files: the schema compacted, values.yaml as JSON.
		{name: "schema and values", archive: tgz(t, file("demo/Chart.yaml", chartYAML),
			file("demo/values.schema.json", "{\n  \"type\": \"object\"\n}\n"),
			file("demo/values.yaml", "# the greeting\nmessage: hi\nimage:\n  tag: \"1.0\"\n")),
			schema: `{"type":"object"}`, defaults: `{"image":{"tag":"1.0"},"message":"hi"}`},
		// values.yaml without a schema, as most public charts ship.
		{name: "values only", archive: tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/values.yaml", "replicas: 2\n")),
			defaults: `{"replicas":2}`},
		// A chart without either has neither.
		{name: "neither", archive: tgz(t, file("demo/Chart.yaml", chartYAML))},
		// A values.yaml of comments only (or {}) sets nothing.
		{name: "empty values", archive: tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/values.yaml", "# no settings\n{}\n"))},
		// A subchart's values are not the chart's.
		{name: "subchart values", archive: tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/values.yaml", "a: 1\n"),
			file("demo/charts/sub/Chart.yaml", chartYAML), file("demo/charts/sub/values.yaml", "b: 2\n")),
			defaults: `{"a":1}`},
		// The archive checks come first: a values.yaml that links to a
		// file of the manager's host is never read.
		{name: "symlink", archive: tgz(t, file("demo/Chart.yaml", chartYAML),
			tarEntry{Hdr: tar.Header{Name: "demo/values.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}}),
			err: `entry "demo/values.yaml": is a symbolic link`, unsafe: true},
		// So is a file outside the chart folder.
		{name: "parent path", archive: tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/../values.yaml", "a: 1\n")),
			err: `contains ".."`, unsafe: true},
		{name: "schema not JSON", archive: tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/values.schema.json", "{type: object")),
			err: "values.schema.json is not JSON"},
		{name: "schema not an object", archive: tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/values.schema.json", `["a"]`)),
			err: "values.schema.json is not a JSON object"},
		{name: "values not a mapping", archive: tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/values.yaml", "- a\n- b\n")),
			err: "values.yaml is not a YAML mapping"},
		// Too large to keep in an Extension's status.
		{name: "too large", archive: tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/values.yaml", "big: "+big+"\n")),
			err: "more than the 256 KiB Annex shows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := catalog.ReadChartValues(c.archive, catalog.Limits{})
			if c.err != "" {
				var unsafe *catalog.UnsafeArchiveError
				if err == nil || !strings.Contains(err.Error(), c.err) || errors.As(err, &unsafe) != c.unsafe {
					t.Fatalf("error %v, want one containing %q (unsafe archive: %v)", err, c.err, c.unsafe)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Schema) != c.schema || string(got.Defaults) != c.defaults {
				t.Errorf("schema %s defaults %s, want %s and %s", got.Schema, got.Defaults, c.schema, c.defaults)
			}
		})
	}
}

// The request annotation and the entries of status.values: what is
// asked, what is current for the version's digest, and what is kept.
func TestValuesRequestsAndEntries(t *testing.T) {
	for _, c := range []struct{ annotation, add, want string }{
		{"", "1.0.0", "1.0.0"},                          // the first ask
		{"1.0.0", "2.0.0", "1.0.0,2.0.0"},               // another version joins
		{"1.0.0, 2.0.0,,1.0.0", "2.0.0", "1.0.0,2.0.0"}, // blanks and repeats go
	} {
		if got := catalog.AddRequestedVersion(c.annotation, c.add); got != c.want {
			t.Errorf("AddRequestedVersion(%q, %q) = %q, want %q", c.annotation, c.add, got, c.want)
		}
	}

	digest := "sha256:" + strings.Repeat("a", 64)
	ext := &v1alpha1.Extension{
		Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			{Version: "2.0.0", Source: v1alpha1.ArtifactSource{URL: "http://x/2.tgz", Digest: digest}},
			{Version: "1.0.0", Source: v1alpha1.ArtifactSource{URL: "http://x/1.tgz"}},
		}},
		Status: v1alpha1.ExtensionStatus{Values: []v1alpha1.VersionValues{
			{Version: "2.0.0", Digest: "sha256:" + strings.Repeat("b", 64)},
			{Version: "1.0.0", Digest: digest},
		}},
	}
	for _, c := range []struct {
		version string
		current bool
	}{
		{"2.0.0", false}, // read from an archive the catalog no longer offers
		{"1.0.0", true},  // no digest to compare: what was read stands
		{"3.0.0", false}, // never read
	} {
		if _, ok := catalog.CurrentValues(ext, c.version); ok != c.current {
			t.Errorf("CurrentValues(%s) = %v, want %v", c.version, ok, c.current)
		}
	}

	var kept []v1alpha1.VersionValues
	for _, v := range []string{"1", "2", "3", "4", "5", "3"} {
		kept = catalog.RememberValues(kept, v1alpha1.VersionValues{Version: v})
	}
	var order []string
	for _, e := range kept {
		order = append(order, e.Version)
	}
	// The most recently asked first, at most MaxVersionValues.
	if got := strings.Join(order, ","); got != "3,5,4,2" {
		t.Errorf("kept %s, want 3,5,4,2", got)
	}
}
