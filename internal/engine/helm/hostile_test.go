package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// billionLaughs is a YAML alias bomb (CVE-2019-11253): nine levels of nine
// aliases each, a billion strings once expanded.
func billionLaughs(key string) string {
	s := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for i := range 8 {
		cur := string(rune('b' + i))
		s += cur + ": &" + cur + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
		prev = cur
	}
	return s + key + ": *" + prev + "\n"
}

// TestRenderRefusesHostileCharts has one case per class of chart attack in
// Helm's CVE history that reaches the renderer: each is refused with a
// clear error (or, for the sandboxed functions, answered from nothing),
// without a panic and in bounded memory.
func TestRenderRefusesHostileCharts(t *testing.T) {
	symlinked := func() []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		chartYAML := "apiVersion: v2\nname: podinfo\nversion: 6.5.0\n"
		_ = tw.WriteHeader(&tar.Header{Name: "podinfo/Chart.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(chartYAML))})
		_, _ = tw.Write([]byte(chartYAML))
		_ = tw.WriteHeader(&tar.Header{Name: "podinfo/values.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
		_ = tw.Close()
		_ = zw.Close()
		return buf.Bytes()
	}()
	base := map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: podinfo\nversion: 6.5.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
	}
	tests := []struct {
		name    string
		archive []byte
		want    string
	}{
		// CVE-2019-18658 / CVE-2025-53547: links are refused before Helm's loader.
		{"symlink", symlinked, `chart archive refused: entry "podinfo/values.yaml": is a symbolic link (to "/etc/passwd")`},
		// CVE-2019-11253: an alias bomb in values.yaml.
		{"alias bomb in values", chartArchive(t, "podinfo", with(base, map[string]string{"values.yaml": billionLaughs("x")})), "excessive aliasing"},
		// ... and in Chart.yaml.
		{"alias bomb in Chart.yaml", chartArchive(t, "podinfo", with(base, map[string]string{"Chart.yaml": "apiVersion: v2\nname: podinfo\nversion: 6.5.0\n" + billionLaughs("annotations")})), "excessive aliasing"},
		// CVE-2025-32387: a schema referring to itself forever.
		{"recursive $ref", chartArchive(t, "podinfo", with(base, map[string]string{"values.schema.json": `{"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}}}`})), "causing reference cycle"},
		// CVE-2025-55199: a schema pulling in a remote document.
		{"remote $ref", chartArchive(t, "podinfo", with(base, map[string]string{"values.schema.json": `{"$ref": "http://169.254.169.254/latest/meta-data"}`})), "references outside values.schema.json are not allowed"},
		// CVE-2022-23525 / CVE-2025-55198: Chart.yaml of the wrong shape.
		{"malformed Chart.yaml", chartArchive(t, "podinfo", with(base, map[string]string{"Chart.yaml": "apiVersion: v2\nname: [podinfo]\nversion: 6.5.0\n"})), "Chart.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(Input{Archive: tt.archive, Name: "web", Namespace: "apps", ExtensionRef: "podinfo 6.5.0"})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Render() error = %v, want one containing %q", err, tt.want)
			}
			t.Logf("%s: %v", tt.name, err)
		})
	}

	// CVE-2020-11013 / CVE-2023-25165: lookup and getHostByName reach
	// nothing outside the render; they answer empty.
	res, err := Render(Input{Archive: chartArchive(t, "podinfo", with(base, map[string]string{"templates/probe.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: probe
data:
  secret: {{ lookup "v1" "Secret" "kube-system" "admin" | toJson | quote }}
  host: {{ getHostByName "metadata.google.internal" | quote }}
`})), Name: "web", Namespace: "apps", ExtensionRef: "podinfo 6.5.0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range res.Objects {
		if o.GetName() == "probe" {
			data := o.Object["data"].(map[string]any)
			if data["secret"] != "{}" || data["host"] != "" {
				t.Fatalf("lookup/getHostByName reached out: %v", data)
			}
			return
		}
	}
	t.Fatal("no probe ConfigMap rendered")
}
