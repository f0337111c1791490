package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	annexvalues "github.com/annex-platform/annex/internal/values"
)

// chartArchive packs files (paths relative to the chart directory) into an
// in-memory .tgz whose top-level directory is dir, in sorted path order.
func chartArchive(t testing.TB, dir string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		hdr := &tar.Header{Name: dir + "/" + name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// with returns a copy of files with the given files added, replaced or
// (for an empty content) removed.
func with(files map[string]string, changes map[string]string) map[string]string {
	out := maps.Clone(files)
	for k, v := range changes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// podinfo is a small application chart: a Deployment and a Service, a
// partial, NOTES, a test hook, a pre-install hook and a CRD.
var podinfo = map[string]string{
	"Chart.yaml": "apiVersion: v2\nname: podinfo\nversion: 6.5.0\nappVersion: 6.5.0\n",
	"values.yaml": `replicaCount: 2
image:
  repository: ghcr.io/stefanprodan/podinfo
  tag: 6.5.0
service:
  port: 9898
  annotations:
    team: web
`,
	"templates/_helpers.tpl": `{{- define "podinfo.fullname" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}`,
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "podinfo.fullname" . }}
spec:
  replicas: {{ .Values.replicaCount }}
  template:
    spec:
      containers:
        - name: podinfo
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`,
	"templates/service.yaml": `---
# the service
apiVersion: v1
kind: Service
metadata:
  name: {{ include "podinfo.fullname" . }}
  {{- with .Values.service.annotations }}
  annotations: {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  ports:
    - port: {{ .Values.service.port }}
---
`,
	"templates/hooks.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
---
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-test
  annotations:
    helm.sh/hook: test
`,
	"templates/NOTES.txt": "Installed {{ .Release.Name }} in {{ .Release.Namespace }} (upgrade={{ .Release.IsUpgrade }}).",
	"crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
`,
}

func input(t testing.TB, files map[string]string, values map[string]any) Input {
	return Input{
		Archive:      chartArchive(t, "podinfo", files),
		Name:         "web",
		Namespace:    "apps",
		Values:       values,
		KubeVersion:  "v1.37.1",
		ExtensionRef: "podinfo 6.5.0",
	}
}

// ids lists "Kind/name" of objs in order.
func ids(objs []*unstructured.Unstructured) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.GetKind() + "/" + o.GetName()
	}
	return out
}

func TestRenderChart(t *testing.T) {
	res, err := Render(input(t, podinfo, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.ChartName != "podinfo" || res.ChartVersion != "6.5.0" {
		t.Errorf("chart = %s %s, want podinfo 6.5.0", res.ChartName, res.ChartVersion)
	}
	if got, want := ids(res.CRDs), []string{"CustomResourceDefinition/widgets.example.com"}; !slices.Equal(got, want) {
		t.Errorf("CRDs = %v, want %v", got, want)
	}
	// Ordered by file name; the test hook Pod is dropped, the pre-install Job kept.
	if got, want := ids(res.Objects), []string{"Deployment/web-podinfo", "Job/web-migrate", "Service/web-podinfo"}; !slices.Equal(got, want) {
		t.Errorf("Objects = %v, want %v", got, want)
	}
	if got := res.Objects[1].GetAnnotations()["helm.sh/hook"]; got != "pre-install,pre-upgrade" {
		t.Errorf("Job hook annotation = %q, want it kept", got)
	}
	for _, o := range res.Objects {
		if o.GetNamespace() != "" {
			t.Errorf("%s/%s has namespace %q; render must leave namespaces to the applier", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	replicas, _, _ := unstructured.NestedInt64(res.Objects[0].Object, "spec", "replicas")
	if replicas != 2 {
		t.Errorf("replicas = %d, want 2 (int64 from chart defaults)", replicas)
	}
	if want := "Installed web in apps (upgrade=false)."; res.Notes != want {
		t.Errorf("Notes = %q, want %q", res.Notes, want)
	}
	for _, d := range []string{res.ValuesDigest, res.ManifestDigest} {
		if !strings.HasPrefix(d, "sha256:") || len(d) != len("sha256:")+64 {
			t.Errorf("digest %q is not sha256:<hex>", d)
		}
	}
}

func TestRenderValues(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		// wantValues are expected entries of Result.Values (top-level keys).
		wantValues map[string]any
		wantImage  string
		wantTeam   string // the Service's "team" annotation
	}{{
		// No user values: the chart defaults apply.
		name:   "defaults",
		values: nil,
		wantValues: map[string]any{
			"replicaCount": float64(2),
			"service":      map[string]any{"port": float64(9898), "annotations": map[string]any{"team": "web"}},
		},
		wantImage: "ghcr.io/stefanprodan/podinfo:6.5.0",
		wantTeam:  "web",
	}, {
		// User values override scalars and merge into maps, keeping sibling defaults.
		name:   "override and deep merge",
		values: map[string]any{"replicaCount": 3, "image": map[string]any{"tag": "6.6.0"}},
		wantValues: map[string]any{
			"replicaCount": float64(3),
			"image":        map[string]any{"repository": "ghcr.io/stefanprodan/podinfo", "tag": "6.6.0"},
		},
		wantImage: "ghcr.io/stefanprodan/podinfo:6.6.0",
		wantTeam:  "web",
	}, {
		// A null user value deletes the chart default.
		name:   "null deletes",
		values: map[string]any{"service": map[string]any{"annotations": nil}},
		wantValues: map[string]any{
			"service": map[string]any{"port": float64(9898)},
		},
		wantImage: "ghcr.io/stefanprodan/podinfo:6.5.0",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Render(input(t, podinfo, tt.values))
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.wantValues {
				if got := res.Values[k]; !reflect.DeepEqual(got, want) {
					t.Errorf("Values[%q] = %#v, want %#v", k, got, want)
				}
			}
			containers, _, _ := unstructured.NestedSlice(res.Objects[0].Object, "spec", "template", "spec", "containers")
			if got := containers[0].(map[string]any)["image"]; got != tt.wantImage {
				t.Errorf("image = %v, want %s", got, tt.wantImage)
			}
			if got := res.Objects[2].GetAnnotations()["team"]; got != tt.wantTeam {
				t.Errorf("Service annotation team = %q, want %q", got, tt.wantTeam)
			}
		})
	}
}

const podinfoSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["image"],
  "properties": {
    "replicaCount": {"type": "integer", "minimum": 0},
    "image": {
      "type": "object",
      "required": ["repository"],
      "properties": {"tag": {"type": "string"}, "pullPolicy": {"enum": ["Always", "IfNotPresent"]}}
    },
    "ports": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 15}}}}
  }
}`

// redisChart is a subchart archive with its own schema and CRD.
func redisChart(t testing.TB) string {
	return string(chartArchive(t, "redis", map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: redis\nversion: 1.0.0\n",
		"values.yaml":        "port: 6379\n",
		"values.schema.json": `{"type": "object", "properties": {"port": {"type": "integer", "maximum": 65535}}}`,
		"templates/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: redis\nspec:\n  ports:\n    - port: {{ .Values.port }}\n",
		"crds/cache.yaml":    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: caches.example.com\n",
	}))
}

func TestRenderErrors(t *testing.T) {
	withSchema := with(podinfo, map[string]string{"values.schema.json": podinfoSchema})
	withRedis := with(podinfo, map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: podinfo\nversion: 6.5.0\ndependencies:\n  - name: redis\n    version: 1.0.0\n",
		"charts/redis-1.0.0.tgz": redisChart(t),
	})
	tests := []struct {
		name    string
		archive []byte
		values  map[string]any
		// check asserts the error's type and content.
		check func(t *testing.T, err error)
	}{{
		// Every violation is listed, sorted by path, with the offending value.
		name:    "values break the schema",
		archive: chartArchive(t, "podinfo", withSchema),
		values: map[string]any{
			"replicaCount": -1,
			"image":        map[string]any{"repository": nil, "tag": 5, "pullPolicy": "Sometimes"},
			"ports":        []any{map[string]any{"name": "a-very-long-port-name"}},
		},
		check: wantValuesError(`values.image.pullPolicy: must be one of "Always", "IfNotPresent" (got "Sometimes")
values.image.repository: is required
values.image.tag: must be of type string (got 5)
values.ports[0].name: must be at most 15 characters long (got "a-very-long-port-name")
values.replicaCount: must be >= 0 (got -1); see extension "podinfo 6.5.0" values schema`),
	}, {
		// A subchart's schema applies to its section of the values.
		name:    "subchart values break the subchart schema",
		archive: chartArchive(t, "podinfo", withRedis),
		values:  map[string]any{"redis": map[string]any{"port": 70000}},
		check:   wantValuesError(`values.redis.port: must be <= 65535 (got 70000); see extension "podinfo 6.5.0" values schema`),
	}, {
		// A $ref outside the schema document is never fetched.
		name: "remote schema reference",
		archive: chartArchive(t, "podinfo", with(podinfo, map[string]string{
			"values.schema.json": `{"properties": {"image": {"$ref": "https://example.com/image.json"}}}`,
		})),
		check: wantError[*ArchiveError](`load chart of extension "podinfo 6.5.0": podinfo/values.schema.json: $ref "https://example.com/image.json" cannot be used: references outside values.schema.json are not allowed; inline the referenced schema into values.schema.json`),
	}, {
		// A relative $ref would read a local file; it is refused too.
		name: "file schema reference",
		archive: chartArchive(t, "podinfo", with(podinfo, map[string]string{
			"values.schema.json": `{"properties": {"image": {"$ref": "image.json"}}}`,
		})),
		check: wantError[*ArchiveError](`load chart of extension "podinfo 6.5.0": podinfo/values.schema.json: $ref "file:///image.json" cannot be used: references outside values.schema.json are not allowed; inline the referenced schema into values.schema.json`),
	}, {
		// A failing template is named in the error, with Helm's message.
		name: "template error",
		archive: chartArchive(t, "podinfo", with(podinfo, map[string]string{
			"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ required \"config.a is required\" .Values.config }}\n",
		})),
		check: func(t *testing.T, err error) {
			re := wantType[*RenderError](t, err)
			if re.Template != "podinfo/templates/configmap.yaml" {
				t.Errorf("Template = %q, want podinfo/templates/configmap.yaml", re.Template)
			}
			if !strings.Contains(err.Error(), "config.a is required") {
				t.Errorf("error %q lacks Helm's message", err)
			}
		},
	}, {
		// A template that is not valid Go template syntax is named too.
		name: "template parse error",
		archive: chartArchive(t, "podinfo", with(podinfo, map[string]string{
			"templates/broken.yaml": "{{ if }}",
		})),
		check: func(t *testing.T, err error) {
			if re := wantType[*RenderError](t, err); re.Template != "podinfo/templates/broken.yaml" {
				t.Errorf("Template = %q, want podinfo/templates/broken.yaml (error %q)", re.Template, err)
			}
		},
	}, {
		// Rendered output that is not YAML names the file and document.
		name: "invalid YAML output",
		archive: chartArchive(t, "podinfo", with(podinfo, map[string]string{
			"templates/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\nkey: [unclosed\n",
		})),
		check: func(t *testing.T, err error) {
			re := wantType[*RenderError](t, err)
			if re.Template != "podinfo/templates/bad.yaml" || !strings.HasPrefix(re.Message, "document 2: invalid YAML") {
				t.Errorf("got %q (template %q), want document 2 of podinfo/templates/bad.yaml", re.Message, re.Template)
			}
		},
	}, {
		// An object the applier could not address is refused.
		name: "object without name",
		archive: chartArchive(t, "podinfo", with(podinfo, map[string]string{
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n",
		})),
		check: wantError[*RenderError](`render extension "podinfo 6.5.0": podinfo/templates/cm.yaml: document 1: ConfigMap has no metadata.name; every object needs apiVersion, kind and metadata.name as non-empty strings`),
	}, {
		// The chart's kubeVersion constraint is checked against Input.KubeVersion.
		name: "incompatible kubeVersion",
		archive: chartArchive(t, "podinfo", with(podinfo, map[string]string{
			"Chart.yaml": "apiVersion: v2\nname: podinfo\nversion: 6.5.0\nkubeVersion: '<1.30.0'\n",
		})),
		check: wantError[*RenderError](`render extension "podinfo 6.5.0": chart requires kubeVersion "<1.30.0", which Kubernetes v1.37.1 does not satisfy; pick a chart version that supports this cluster`),
	}, {
		// Bytes that are not gzip.
		name:    "not an archive",
		archive: []byte("apiVersion: v2\n"),
		check: func(t *testing.T, err error) {
			if !errors.Is(err, gzip.ErrHeader) {
				t.Errorf("error %q does not wrap gzip.ErrHeader", err)
			}
			wantType[*ArchiveError](t, err)
		},
	}, {
		// A tarball without Chart.yaml.
		name:    "no Chart.yaml",
		archive: chartArchive(t, "podinfo", map[string]string{"values.yaml": "a: 1\n"}),
		check:   wantError[*ArchiveError](`load chart of extension "podinfo 6.5.0": no Chart.yaml at the top of the archive`),
	}, {
		// Chart API v3 is experimental in Helm 4 and not supported.
		name:    "chart apiVersion v3",
		archive: chartArchive(t, "podinfo", with(podinfo, map[string]string{"Chart.yaml": "apiVersion: v3\nname: podinfo\nversion: 6.5.0\n"})),
		check:   wantError[*ArchiveError](`load chart of extension "podinfo 6.5.0": chart apiVersion "v3" is not supported; use apiVersion v2`),
	}, {
		// A declared subchart that was not packaged.
		name: "missing dependency",
		archive: chartArchive(t, "podinfo", with(podinfo, map[string]string{
			"Chart.yaml": "apiVersion: v2\nname: podinfo\nversion: 6.5.0\ndependencies:\n  - name: redis\n    version: 1.0.0\n",
		})),
		check: wantError[*ArchiveError](`load chart of extension "podinfo 6.5.0": chart "podinfo" declares dependency "redis" but charts/ does not contain it; package the chart with its dependencies (helm dependency build)`),
	}, {
		// Library charts have no objects to install.
		name:    "library chart",
		archive: chartArchive(t, "podinfo", with(podinfo, map[string]string{"Chart.yaml": "apiVersion: v2\nname: podinfo\nversion: 6.5.0\ntype: library\n"})),
		check:   wantError[*ArchiveError](`load chart of extension "podinfo 6.5.0": chart "podinfo" is a library chart, which cannot be installed`),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Archive: tt.archive, Name: "web", Namespace: "apps", Values: tt.values, KubeVersion: "v1.37.1", ExtensionRef: "podinfo 6.5.0"}
			res, err := Render(in)
			if err == nil {
				t.Fatalf("Render succeeded with %d objects, want an error", len(res.Objects))
			}
			tt.check(t, err)
		})
	}
}

func wantType[E error](t *testing.T, err error) E {
	t.Helper()
	e, ok := errors.AsType[E](err)
	if !ok {
		t.Fatalf("error %q (%T) is not a %T", err, err, e)
	}
	return e
}

func wantError[E error](msg string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		wantType[E](t, err)
		if err.Error() != msg {
			t.Errorf("error:\n%s\nwant:\n%s", err, msg)
		}
	}
}

func wantValuesError(msg string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		ve := wantType[*ValuesError](t, err)
		if ve.Extension != "podinfo 6.5.0" {
			t.Errorf("Extension = %q", ve.Extension)
		}
		if err.Error() != msg {
			t.Errorf("error:\n%s\nwant:\n%s", err, msg)
		}
	}
}

func TestRenderSubcharts(t *testing.T) {
	files := with(podinfo, map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: podinfo\nversion: 6.5.0\ndependencies:\n  - name: redis\n    version: 1.0.0\n    condition: redis.enabled\n",
		"values.yaml":            podinfo["values.yaml"] + "redis:\n  enabled: true\n",
		"charts/redis-1.0.0.tgz": redisChart(t),
	})
	tests := []struct {
		name     string
		values   map[string]any
		wantCRDs []string
		wantObjs []string
	}{{
		// The subchart's CRDs follow the parent's and its templates render
		// with its own section of the values.
		name:     "enabled",
		values:   map[string]any{"redis": map[string]any{"port": 7000}},
		wantCRDs: []string{"CustomResourceDefinition/widgets.example.com", "CustomResourceDefinition/caches.example.com"},
		wantObjs: []string{"Service/redis", "Deployment/web-podinfo", "Job/web-migrate", "Service/web-podinfo"},
	}, {
		// A false condition drops the subchart with its CRDs.
		name:     "disabled by condition",
		values:   map[string]any{"redis": map[string]any{"enabled": false}},
		wantCRDs: []string{"CustomResourceDefinition/widgets.example.com"},
		wantObjs: []string{"Deployment/web-podinfo", "Job/web-migrate", "Service/web-podinfo"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Render(input(t, files, tt.values))
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(res.CRDs); !slices.Equal(got, tt.wantCRDs) {
				t.Errorf("CRDs = %v, want %v", got, tt.wantCRDs)
			}
			if got := ids(res.Objects); !slices.Equal(got, tt.wantObjs) {
				t.Errorf("Objects = %v, want %v", got, tt.wantObjs)
			}
		})
	}
}

func TestRenderSubchartOrder(t *testing.T) {
	// The loader collects subcharts from a map; CRD order must not depend on it.
	files := with(podinfo, map[string]string{})
	for _, name := range []string{"charlie", "alpha", "bravo"} {
		files["charts/"+name+".tgz"] = string(chartArchive(t, name, map[string]string{
			"Chart.yaml":    "apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n",
			"crds/crd.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + name + ".example.com\n",
		}))
	}
	want := []string{
		"CustomResourceDefinition/widgets.example.com",
		"CustomResourceDefinition/alpha.example.com",
		"CustomResourceDefinition/bravo.example.com",
		"CustomResourceDefinition/charlie.example.com",
	}
	for range 10 {
		res, err := Render(input(t, files, nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(res.CRDs); !slices.Equal(got, want) {
			t.Fatalf("CRDs = %v, want %v", got, want)
		}
	}
}

func TestRenderChartAPIVersions(t *testing.T) {
	tests := []struct {
		name      string
		chartYAML string
	}{
		// The current chart API.
		{"v2", "apiVersion: v2\nname: podinfo\nversion: 6.5.0\n"},
		// Helm 2 charts still render.
		{"v1", "apiVersion: v1\nname: podinfo\nversion: 6.5.0\n"},
		// Helm 2 also accepted charts without apiVersion; they are v1.
		{"missing", "name: podinfo\nversion: 6.5.0\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Render(input(t, with(podinfo, map[string]string{"Chart.yaml": tt.chartYAML}), nil))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := ids(res.Objects), []string{"Deployment/web-podinfo", "Job/web-migrate", "Service/web-podinfo"}; !slices.Equal(got, want) {
				t.Errorf("Objects = %v, want %v", got, want)
			}
		})
	}
}

func TestRenderSandbox(t *testing.T) {
	// lookup sees no cluster and DNS is off, but rendering still succeeds.
	files := with(podinfo, map[string]string{
		"templates/probe.yaml": `{{- $secret := lookup "v1" "Secret" "kube-system" "admin" -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: probe
data:
  lookupEmpty: {{ empty $secret | quote }}
  lookupLen: {{ len $secret | quote }}
  host: {{ getHostByName "example.com" | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
`,
	})
	res, err := Render(input(t, files, nil))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Objects, func(o *unstructured.Unstructured) bool { return o.GetName() == "probe" })
	if i < 0 {
		t.Fatalf("no probe ConfigMap in %v", ids(res.Objects))
	}
	data, _, _ := unstructured.NestedStringMap(res.Objects[i].Object, "data")
	want := map[string]string{"lookupEmpty": "true", "lookupLen": "0", "host": "", "kube": "v1.37.1"}
	if !maps.Equal(data, want) {
		t.Errorf("data = %v, want %v", data, want)
	}
}

func TestRenderDeterministic(t *testing.T) {
	values := map[string]any{"replicaCount": 3, "service": map[string]any{"annotations": map[string]any{"b": "2", "a": "1"}}}
	first, err := Render(input(t, podinfo, values))
	if err != nil {
		t.Fatal(err)
	}
	// The same Input renders to an identical Result.
	second, err := Render(input(t, podinfo, values))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) {
		t.Errorf("two renders of the same input differ:\n%+v\n%+v", first, second)
	}

	tests := []struct {
		name   string
		in     Input
		values bool // whether ValuesDigest must change
		objs   bool // whether ManifestDigest must change
	}{{
		// Different values change both digests.
		name:   "values changed",
		in:     input(t, podinfo, map[string]any{"replicaCount": 4}),
		values: true, objs: true,
	}, {
		// Values the templates ignore change only the values digest.
		name:   "unused value changed",
		in:     input(t, podinfo, annexvalues.Merge(values, map[string]any{"unused": true})),
		values: true, objs: false,
	}, {
		// .Release.IsUpgrade changes NOTES only, not the objects.
		name:   "upgrade",
		in:     func() Input { in := input(t, podinfo, values); in.IsUpgrade = true; return in }(),
		values: false, objs: false,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Render(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if changed := res.ValuesDigest != first.ValuesDigest; changed != tt.values {
				t.Errorf("ValuesDigest changed = %v, want %v", changed, tt.values)
			}
			if changed := res.ManifestDigest != first.ManifestDigest; changed != tt.objs {
				t.Errorf("ManifestDigest changed = %v, want %v", changed, tt.objs)
			}
		})
	}
}

func FuzzRender(f *testing.F) {
	f.Add(chartArchive(f, "podinfo", podinfo))
	f.Add(chartArchive(f, "podinfo", with(podinfo, map[string]string{"values.schema.json": podinfoSchema})))
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte("apiVersion: v2\n"))
	f.Fuzz(func(t *testing.T, archive []byte) {
		res, err := Render(Input{Archive: archive, Name: "fuzz", Namespace: "default", ExtensionRef: "fuzz 0.0.0"})
		if err == nil && res == nil {
			t.Fatal("nil Result without an error")
		}
	})
}

// FuzzRenderChart reaches past the gzip checksum that stops most FuzzRender
// mutations: it packs fuzzed values.yaml, schema and template text into a
// well-formed archive.
func FuzzRenderChart(f *testing.F) {
	f.Add(podinfo["values.yaml"], podinfoSchema, podinfo["templates/service.yaml"])
	f.Add("a: {b: [1, 2]}", `{"properties": {"a": {"$ref": "#/definitions/x"}}, "definitions": {"x": {"type": "object"}}}`, "{{ toYaml .Values }}")
	f.Add("", "", `{{ lookup "v1" "Secret" "a" "b" | toYaml }}`)
	f.Fuzz(func(t *testing.T, values, schema, template string) {
		files := map[string]string{
			"Chart.yaml":          "apiVersion: v2\nname: fuzz\nversion: 0.1.0\n",
			"values.yaml":         values,
			"templates/fuzz.yaml": template,
			"templates/NOTES.txt": "{{ .Release.Name }}",
		}
		if schema != "" {
			files["values.schema.json"] = schema
		}
		res, err := Render(Input{Archive: chartArchive(t, "fuzz", files), Name: "fuzz", Namespace: "default", ExtensionRef: "fuzz 0.1.0"})
		if err == nil && res == nil {
			t.Fatal("nil Result without an error")
		}
	})
}

// Charts see the target cluster's API versions, as under helm install:
// .Capabilities.APIVersions.Has switches on what the cluster serves.
func TestRenderCapabilitiesAPIVersions(t *testing.T) {
	chart := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: caps\nversion: 1.0.0\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: caps}
data:
  monitoring: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" | quote }}
  core: {{ .Capabilities.APIVersions.Has "v1" | quote }}
`,
	}
	for _, tc := range []struct {
		name       string
		apis       []string
		monitoring string
	}{
		// Without the cluster's list, Helm's defaults: no ServiceMonitor.
		{"default", nil, "false"},
		// A cluster that serves the kind.
		{"served", []string{"v1", "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"}, "true"},
		// A cluster that does not.
		{"not served", []string{"v1", "apps/v1"}, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(t, chart, nil)
			in.APIVersions = tc.apis
			res, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			data, _, _ := unstructured.NestedStringMap(res.Objects[0].Object, "data")
			if data["monitoring"] != tc.monitoring || data["core"] != "true" {
				t.Errorf("data %v, want monitoring %s and core true", data, tc.monitoring)
			}
		})
	}
}
