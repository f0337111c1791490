package record

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// BenchmarkRecordStorage measures the hub storage (Secret data bytes) that
// the records of an operator-sized chart take at 10 revisions, each
// changing one value: before, one gzip'd record per revision (format 1,
// every set inline, as Annex stored them until records had pieces); after,
// indexes plus content-addressed pieces, for one installation and per
// installation of 100 in one namespace (a fleet's installations of the
// chart, one per cluster). Its time is that of encoding one record. The CRDs are the YAML files in
// ANNEX_BENCH_CRDS_DIR when it is set (e.g. kube-prometheus-stack's
// charts/crds/crds), otherwise 10 generated CRDs of about the same size.
func BenchmarkRecordStorage(b *testing.B) {
	crds := benchCRDs(b)
	const revisions = 10
	record := func(inst, rev int) Record {
		r := Record{Revision: int64(rev), Version: "88.5.3", CRDs: crds, Objects: benchObjects(inst, rev)}
		for _, o := range append(append([]*unstructured.Unstructured{}, r.CRDs...), r.Objects...) {
			r.Inventory = append(r.Inventory, refOf(o))
		}
		return r
	}
	// stored[i] is what installation i adds to its namespace's Secrets over
	// the revisions: indexes, and the pieces no record stored before.
	pieces := map[string]bool{}
	var before int
	stored := make([]int, 2)
	for inst := range stored {
		for rev := 1; rev <= revisions; rev++ {
			r := record(inst, rev)
			enc, err := Encode(r)
			if err != nil {
				b.Fatal(err)
			}
			stored[inst] += len(enc.Index)
			for _, p := range enc.Pieces {
				if !pieces[p.Digest] {
					pieces[p.Digest] = true
					stored[inst] += len(p.Data)
				}
			}
			if inst == 0 {
				before += len(encodeInline(b, r))
			}
		}
	}
	// The time is that of encoding one revision's record.
	r := record(0, 1)
	for b.Loop() {
		if _, err := Encode(r); err != nil {
			b.Fatal(err)
		}
	}
	// Every further installation of the fleet adds what the second did.
	// (Reported after the loop, which deletes metrics reported before.)
	const fleet = 100
	b.ReportMetric(float64(before), "before-B/inst")
	b.ReportMetric(float64(stored[0]), "after-B/inst")
	b.ReportMetric(float64(stored[0]+(fleet-1)*stored[1])/fleet, "fleet100-B/inst")
}

// encodeInline is the format-1 record: the whole record, gzip'd, in one
// Secret.
func encodeInline(b *testing.B, r Record) []byte {
	data, err := json.Marshal(envelope{Format: 1, Record: r})
	if err != nil {
		b.Fatal(err)
	}
	out, err := compress(data)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// benchObjects are the chart's regular objects: 120 of the shapes
// kube-prometheus-stack renders (about 300 KB of JSON), named for the
// installation; revision rev changes one value.
func benchObjects(inst, rev int) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i := range 120 {
		name := fmt.Sprintf("kps-%d-%d", inst, i)
		var o map[string]any
		switch i % 4 {
		case 0: // a dashboard ConfigMap
			panels := make([]any, 12)
			for p := range panels {
				panels[p] = map[string]any{"id": p, "title": fmt.Sprintf("Panel %d of %s", p, name), "type": "timeseries",
					"targets": []any{map[string]any{"expr": fmt.Sprintf(`sum(rate(container_cpu_usage_seconds_total{namespace="$namespace", pod=~"%s-.*"}[5m])) by (pod)`, name)}}}
			}
			dash, _ := json.Marshal(map[string]any{"title": name, "panels": panels, "schemaVersion": 39})
			o = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "monitoring"},
				"data": map[string]any{name + ".json": string(dash)}}
		case 1:
			o = map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": map[string]any{"name": name, "namespace": "monitoring"},
				"spec": map[string]any{"groups": []any{map[string]any{"name": name, "rules": []any{
					map[string]any{"alert": "KubePodCrashLooping", "expr": `max_over_time(kube_pod_container_status_waiting_reason{reason="CrashLoopBackOff"}[5m]) >= 1`, "for": "15m"},
					map[string]any{"alert": "KubePodNotReady", "expr": `sum by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Unknown"}) > 0`, "for": "15m"}}}}}}
		case 2:
			o = map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": name},
				"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods", "services", "endpoints", "nodes"}, "verbs": []any{"get", "list", "watch"}}}}
		default:
			o = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name, "namespace": "monitoring"},
				"spec": map[string]any{"replicas": 1, "template": map[string]any{"spec": map[string]any{"containers": []any{
					map[string]any{"name": "app", "image": fmt.Sprintf("quay.io/prometheus-operator/prometheus-operator:v0.93.%d", rev)}}}}}}
		}
		out = append(out, &unstructured.Unstructured{Object: o})
	}
	return out
}

// benchCRDs reads the CRDs of ANNEX_BENCH_CRDS_DIR, or generates 10 of
// about 450 KB each whose schemas repeat like generated ones do.
func benchCRDs(b *testing.B) []*unstructured.Unstructured {
	if dir := os.Getenv("ANNEX_BENCH_CRDS_DIR"); dir != "" {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			b.Fatalf("ANNEX_BENCH_CRDS_DIR=%s holds no *.yaml (%v)", dir, err)
		}
		var out []*unstructured.Unstructured
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				b.Fatal(err)
			}
			for _, doc := range strings.Split(string(data), "\n---") {
				o := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil || o.GetKind() != "CustomResourceDefinition" {
					continue
				}
				out = append(out, o)
			}
		}
		return out
	}
	rng := rand.New(rand.NewPCG(88, 5))
	words := strings.Fields("the of a to is and in for field pod container volume secret name namespace selector label " +
		"must be when if not set defaults specifies which used this object reference key value path port protocol " +
		"resource limits requests affinity toleration node scheduling configuration endpoint tls certificate")
	property := func(depth int) map[string]any {
		var d strings.Builder
		for range 12 + rng.IntN(30) {
			d.WriteString(words[rng.IntN(len(words))] + " ")
		}
		return map[string]any{"type": "string", "description": d.String()}
	}
	var nested func(depth int) map[string]any
	nested = func(depth int) map[string]any {
		props := map[string]any{}
		for i := range 6 {
			if depth < 4 && i%2 == 0 {
				props[fmt.Sprintf("%s%d", words[rng.IntN(len(words))], i)] = nested(depth + 1)
			} else {
				props[fmt.Sprintf("%s%d", words[rng.IntN(len(words))], i)] = property(depth)
			}
		}
		return map[string]any{"type": "object", "properties": props}
	}
	var out []*unstructured.Unstructured
	for i := range 10 {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": fmt.Sprintf("things%d.monitoring.annex.dev", i)},
			"spec": map[string]any{"group": "monitoring.annex.dev", "scope": "Namespaced",
				"names":    map[string]any{"kind": fmt.Sprintf("Thing%d", i), "plural": fmt.Sprintf("things%d", i)},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "schema": map[string]any{"openAPIV3Schema": nested(0)}}}},
		}})
	}
	return out
}

// BenchmarkPieceFleet measures, against a real API server, the Secret
// bytes that the installations of one chart on a fleet of 1,000 clusters
// (one installation per cluster, all in one namespace) store for the
// piece holding the chart's CRDs, which are the same on every cluster:
// benchCRDs (about 4.5 MB of JSON, one piece of about 240 KB). "before" is
// sharing without the buckets (the first copy, then a private copy per
// installation past maxPieceOwners); "after" is pieceCopies' buckets.
// The fleet's size is ANNEX_BENCH_PIECE_FLEET (default 1000).
func BenchmarkPieceFleet(b *testing.B) {
	fleet := 1000
	if v := os.Getenv("ANNEX_BENCH_PIECE_FLEET"); v != "" {
		if _, err := fmt.Sscan(v, &fleet); err != nil || fleet < 1 {
			b.Fatalf("ANNEX_BENCH_PIECE_FLEET=%q: want a positive number", v)
		}
	}
	enc, err := Encode(Record{Revision: 1, CRDs: benchCRDs(b)})
	if err != nil {
		b.Fatal(err)
	}
	if len(enc.Pieces) < 1 {
		b.Fatal("the CRDs are not in pieces")
	}
	piece := enc.Pieces[0]
	for _, variant := range []struct {
		name   string
		levels []uint32
	}{{"before", nil}, {"after", pieceLevels}} {
		b.Run(variant.name, func(b *testing.B) {
			defer func(l []uint32) { pieceLevels = l }(pieceLevels)
			pieceLevels = variant.levels
			for range b.N {
				env := testenv.Start(b)
				for i := range fleet {
					inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "default",
						Name: fmt.Sprintf("kps-cluster-%04d", i), UID: types.UID(fmt.Sprintf("0b8ad0d0-0000-4000-8000-%012d", i))}}
					if err := NewStore(env.Client, env.Client, inst).Attach(b.Context(), []Piece{piece}); err != nil {
						b.Fatal(err)
					}
				}
				var list corev1.SecretList
				if err := env.Client.List(b.Context(), &list, client.InNamespace("default")); err != nil {
					b.Fatal(err)
				}
				copies, size := 0, 0
				for i := range list.Items {
					if list.Items[i].Type == v1alpha1.RecordPieceSecretType {
						data, err := json.Marshal(&list.Items[i])
						if err != nil {
							b.Fatal(err)
						}
						copies++
						size += len(data)
					}
				}
				b.ReportMetric(float64(copies), "copies")
				b.ReportMetric(float64(size)/float64(fleet), "B/inst")
				b.ReportMetric(float64(len(piece.Data)), "piece-B")
				b.Logf("%d installations: %d copies of a %d KiB piece, %.1f KiB per installation (Secrets' JSON)", fleet, copies, len(piece.Data)>>10, float64(size)/1024/float64(fleet))
			}
		})
	}
}
