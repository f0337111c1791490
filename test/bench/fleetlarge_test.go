package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	annexrecord "github.com/annex-platform/annex/internal/record"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// fleetLargeEnv set to 1 makes the simulation's extension 0 a large
// chart (fleetLargeChart) instead of a small one: make bench-fleet
// LARGE=1.
const fleetLargeEnv = "ANNEX_FLEET_LARGE"

// fleetLarge reports whether the environment asks for the large chart.
func fleetLarge(b *testing.B) bool {
	switch v := os.Getenv(fleetLargeEnv); v {
	case "", "0":
		return false
	case "1":
		return true
	default:
		b.Fatalf("%s=%q: want 1 or nothing", fleetLargeEnv, v)
		return false
	}
}

// Sizes of the large chart, shaped like kube-prometheus-stack: most of
// its bytes in CRDs with big OpenAPI schemas (cluster-scoped, the same
// on every cluster), then dashboards in ConfigMaps and a few dozen
// objects named after the release.
const (
	largeCRDs       = 8
	largeDashboards = 20
	// largeMinRendered is what the chart's files must add up to at
	// least: the "over 500 KiB rendered".
	largeMinRendered = 500 << 10
)

// fleetLargeChart is fleetChart's large counterpart: the same note
// ConfigMap (so the values-change phases work alike), plus largeCRDs
// CRDs of about 85 KiB each, largeDashboards dashboard
// ConfigMaps of about 8 KiB, a Deployment, three Services, a
// ServiceAccount, a Role, a ClusterRole and their bindings, all named
// after the release. Its content is generated from a fixed seed, so
// every version renders the same objects for one release; the version
// is in the Deployment's image.
func fleetLargeChart(name, version string) helmrepo.Chart {
	c := fleetChart(name, version)
	rng := rand.New(rand.NewPCG(20, 24))
	// The CRDs' group is the release's: the simulation's clusters share
	// member API servers, where one name can belong to one installation
	// only. On a real fleet the CRDs are the same on every cluster; see
	// "Hub storage with a large chart" in docs/benchmarks.md for what
	// that changes.
	group := "{{ .Release.Name }}.bench.annex.dev"
	for i := range largeCRDs {
		kind := fmt.Sprintf("Monitor%d", i)
		plural := strings.ToLower(kind) + "s"
		crd := map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1",
			"kind":       "CustomResourceDefinition",
			"metadata":   map[string]any{"name": plural + "." + group},
			"spec": map[string]any{
				"group": group,
				"scope": "Namespaced",
				"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
				"versions": []any{map[string]any{
					"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{
						"type":        "object",
						"description": kind + " is a resource of the fleet simulation's large chart.",
						"properties": map[string]any{
							"apiVersion": map[string]any{"type": "string"},
							"kind":       map[string]any{"type": "string"},
							"metadata":   map[string]any{"type": "object"},
							"spec":       largeSchema(rng, 0),
							"status":     largeSchema(rng, 1),
						},
					}},
				}},
			},
		}
		data, err := yaml.Marshal(crd)
		if err != nil {
			panic(err) // maps of strings and numbers always marshal
		}
		c.Files[fmt.Sprintf("templates/crd-%s.yaml", plural)] = string(data)
	}
	for i := range largeDashboards {
		c.Files[fmt.Sprintf("templates/dashboard-%02d.yaml", i)] = largeDashboard(rng, i)
	}
	c.Files["templates/deployment.yaml"] = strings.Replace(c.Files["templates/deployment.yaml"],
		"registry.example/web:1.0", "registry.example/operator:"+version, 1)
	for _, svc := range []string{"operator", "metrics", "alerts"} {
		c.Files["templates/service-"+svc+".yaml"] = fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-%[1]s
  labels: {app: {{ .Release.Name }}, component: %[1]s}
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{name: http, port: 80, targetPort: 8080}]
`, svc)
	}
	c.Files["templates/rbac.yaml"] = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .Release.Name }}
rules:
- apiGroups: [""]
  resources: [configmaps, secrets, services, endpoints, pods]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .Release.Name }}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: {{ .Release.Name }}}
subjects: [{kind: ServiceAccount, name: {{ .Release.Name }}, namespace: {{ .Release.Namespace }}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Release.Name }}
rules:
- apiGroups: ["{{ .Release.Name }}.bench.annex.dev"]
  resources: ["*"]
  verbs: [get, list, watch, update, patch]
- apiGroups: [""]
  resources: [nodes, namespaces, pods, services, endpoints]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .Release.Name }}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {{ .Release.Name }}}
subjects: [{kind: ServiceAccount, name: {{ .Release.Name }}, namespace: {{ .Release.Namespace }}}]
`
	return c
}

// largeWords are the words of the large chart's generated descriptions
// and dashboard queries.
var largeWords = strings.Fields("the of a to is and in for field pod container volume secret name namespace selector label " +
	"must be when if not set defaults specifies which used this object reference key value path port protocol " +
	"resource limits requests affinity toleration node scheduling configuration endpoint tls certificate scrape " +
	"interval timeout relabeling rule alert retention storage replica shard query remote write read")

// largeSchema returns an object schema of nested properties whose
// descriptions repeat words as generated API documentation does; depth
// 0 is the largest (about 60 KiB).
func largeSchema(rng *rand.Rand, depth int) map[string]any {
	props := map[string]any{}
	for i := range 7 {
		name := fmt.Sprintf("%s%s%d", largeWords[rng.IntN(len(largeWords))], strings.ToUpper(largeWords[rng.IntN(len(largeWords))][:1]), i)
		switch {
		case depth < 2 && i%3 == 0:
			props[name] = largeSchema(rng, depth+1)
		case i%3 == 1:
			props[name] = map[string]any{"type": "array", "description": largeDescription(rng), "items": map[string]any{
				"type": "object", "required": []any{"name"}, "properties": map[string]any{
					"name":  map[string]any{"type": "string", "description": largeDescription(rng)},
					"value": map[string]any{"type": "string", "description": largeDescription(rng)},
				}}}
		default:
			props[name] = map[string]any{"type": "string", "description": largeDescription(rng)}
		}
	}
	return map[string]any{"type": "object", "description": largeDescription(rng), "properties": props}
}

func largeDescription(rng *rand.Rand) string {
	words := make([]string, 15+rng.IntN(40))
	for i := range words {
		words[i] = largeWords[rng.IntN(len(largeWords))]
	}
	return strings.Join(words, " ") + "."
}

// largeDashboard is a ConfigMap template holding a Grafana-like
// dashboard of 24 panels, named after the release.
func largeDashboard(rng *rand.Rand, i int) string {
	panels := make([]any, 24)
	for p := range panels {
		metric := fmt.Sprintf("%s_%s_%s_total", largeWords[rng.IntN(len(largeWords))], largeWords[rng.IntN(len(largeWords))], largeWords[rng.IntN(len(largeWords))])
		panels[p] = map[string]any{
			"id": p, "type": "timeseries", "title": largeDescription(rng)[:40],
			"gridPos": map[string]any{"h": 8, "w": 12, "x": (p % 2) * 12, "y": p / 2 * 8},
			"targets": []any{map[string]any{"refId": "A",
				"expr": fmt.Sprintf(`sum(rate(%s{namespace="$namespace", job=~"$job", instance=~"$instance"}[$__rate_interval])) by (pod)`, metric)}},
			"fieldConfig": map[string]any{"defaults": map[string]any{"unit": "short", "min": 0}},
		}
	}
	dash, err := json.Marshal(map[string]any{"title": fmt.Sprintf("Fleet / %02d", i), "uid": fmt.Sprintf("fleet-%02d", i),
		"schemaVersion": 39, "panels": panels, "templating": map[string]any{"list": []any{}}})
	if err != nil {
		panic(err)
	}
	quoted, err := json.Marshal(string(dash))
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-dashboard-%02d
  labels: {app: {{ .Release.Name }}, grafana_dashboard: "1"}
data:
  dashboard-%02d.json: %s
`, i, i, quoted)
}

// chartBytes is the size of a chart's files: about what it renders,
// CRDs included.
func chartBytes(c helmrepo.Chart) int {
	n := 0
	for _, f := range c.Files {
		n += len(f)
	}
	return n
}

// TestFleetLargeChart checks that the large chart is as large as the
// simulation says: over 500 KiB, most of it CRDs.
func TestFleetLargeChart(t *testing.T) {
	c := fleetLargeChart("fleet-0", "1.0.0")
	total, crds := chartBytes(c), 0
	for path, f := range c.Files {
		if strings.HasPrefix(path, "templates/crd-") {
			crds += len(f)
		}
	}
	if total < largeMinRendered {
		t.Errorf("the large chart is %d KiB; want over %d KiB", total>>10, largeMinRendered>>10)
	}
	if crds*2 < total {
		t.Errorf("the large chart's CRDs are %d of %d KiB; want most of it", crds>>10, total>>10)
	}
	t.Logf("large chart: %d KiB, CRDs %d KiB, %d files", total>>10, crds>>10, len(c.Files))

	// What Annex's record of one release stores, and what of it a fleet
	// could share were the CRDs the same on every cluster (in crds/, as
	// kube-prometheus-stack has them): the CRDs' pieces once, the
	// objects' (named after the release) per installation.
	var rec annexrecord.Record
	for path, f := range c.Files {
		if !strings.HasPrefix(path, "templates/") {
			continue
		}
		rendered := strings.NewReplacer("{{ .Release.Name }}", "fleet-0-cluster-0001", "{{ .Release.Namespace }}", "fleet",
			`{{ .Values.note | default "none" | quote }}`, `"none"`).Replace(f)
		for doc := range strings.SplitSeq(rendered, "\n---\n") {
			o := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if o.GetKind() == "CustomResourceDefinition" {
				rec.CRDs = append(rec.CRDs, o)
			} else {
				rec.Objects = append(rec.Objects, o)
			}
		}
	}
	enc, err := annexrecord.Encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := annexrecord.DecodeIndex(enc.Index)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	for _, p := range enc.Pieces {
		sizes[p.Digest] = len(p.Data)
	}
	sum := func(digests []string) (n int) {
		for _, d := range digests {
			n += sizes[d]
		}
		return n
	}
	if len(ix.CRDPieces) == 0 || len(ix.ObjectPieces) == 0 {
		t.Fatalf("the large chart's record is not in pieces: %d CRD pieces, %d object pieces", len(ix.CRDPieces), len(ix.ObjectPieces))
	}
	t.Logf("its record: index %d B, CRD pieces %d KiB (%d objects), object pieces %d KiB (%d objects), gzip'd",
		len(enc.Index), sum(ix.CRDPieces)>>10, len(rec.CRDs), sum(ix.ObjectPieces)>>10, len(rec.Objects))
}
