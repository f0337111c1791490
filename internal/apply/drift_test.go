package apply

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/apply/reqcount"
)

// managedBy is a metadata.managedFields list whose only entry is an apply
// of field manager "annex" owning fieldsV1.
func managedBy(fieldsV1 string) string {
	return `managedFields: [{manager: annex, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: ` + fieldsV1 + `}]`
}

func TestDrifted(t *testing.T) {
	const desiredCM = `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: demo, labels: {app: web}}
data: {key: a}`
	const cmFields = `{"f:metadata": {"f:labels": {"f:app": {}}}, "f:data": {"f:key": {}}}`
	const desiredDeploy = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo, creationTimestamp: null}
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: web
        image: web:1
        args: [--port, "8080"]
        ports: [{containerPort: 8080}]
      nodeSelector: null
status: {}`
	const deployFields = `{"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:name": {}, "f:image": {}, "f:args": {}, "f:ports": {"k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}}}}`
	// liveDeploy has server defaults, another manager's sidecar and a status.
	const liveDeploy = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  creationTimestamp: "2025-01-01T00:00:00Z"
  resourceVersion: "42"
  generation: 3
  ` + `%s` + `
spec:
  replicas: 1
  revisionHistoryLimit: 10
  template:
    spec:
      containers:
      - name: web
        image: web:1
        args: [--port, "8080"]
        imagePullPolicy: IfNotPresent
        ports: [{containerPort: 8080, protocol: TCP}]
      - {name: sidecar, image: proxy:2}
status: {replicas: 1}`
	withManaged := func(doc, fields string) string {
		return replaceOnce(doc, "%s", managedBy(fields))
	}

	tests := []struct {
		name          string
		desired, live string
		want          []string
	}{
		{
			// Server defaults, status, server metadata and another
			// manager's list element are not drift; nor is a desired
			// null, an empty status, or a port key whose protocol the server
			// defaulted.
			name:    "deployment unchanged",
			desired: desiredDeploy,
			live:    withManaged(liveDeploy, deployFields),
		},
		{
			// Same content.
			name:    "configmap unchanged",
			desired: desiredCM,
			live: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: demo, labels: {app: web}, ` + managedBy(cmFields) + `}
data: {key: a}`,
		},
		{
			// Another manager changed a value Annex sets.
			name:    "value changed",
			desired: desiredCM,
			live: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: demo, labels: {app: web}, ` + managedBy(cmFields) + `}
data: {key: b}`,
			want: []string{".data.key"},
		},
		{
			// A field Annex sets was removed, and a label changed.
			name:    "field and label missing",
			desired: desiredCM,
			live: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: demo, labels: {app: api}, ` + managedBy(cmFields) + `}`,
			want: []string{".data", ".metadata.labels.app"},
		},
		{
			// Annex manages data.old, which desired no longer sets: an
			// apply would remove it.
			name:    "field left the desired object",
			desired: desiredCM,
			live: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: demo, labels: {app: web}, ` +
				managedBy(`{"f:metadata": {"f:labels": {"f:app": {}}}, "f:data": {"f:key": {}, "f:old": {}}}`) + `}
data: {key: a, old: x}`,
			want: []string{".data.old"},
		},
		{
			// Numbers compare by value, whatever their Go type.
			name:    "float and integer",
			desired: withReplicas(desiredDeploy, "1.0"),
			live:    withManaged(liveDeploy, deployFields),
		},
		{
			// A string is not a number: only the server can tell whether it
			// normalises one to the other.
			name:    "string against number",
			desired: withReplicas(desiredDeploy, `"1"`),
			live:    withManaged(liveDeploy, deployFields),
			want:    []string{".spec.replicas"},
		},
		{
			// A list of scalars is compared whole; a list element with a
			// name is found by it.
			name:    "scalar list changed",
			desired: replaceOnce(desiredDeploy, `args: [--port, "8080"]`, `args: [--port, "9090"]`),
			live:    withManaged(liveDeploy, deployFields),
			want:    []string{`.spec.template.spec.containers[name="web"].args`},
		},
		{
			// The container Annex manages is gone from desired: the new one
			// is missing live, and the old one would be removed.
			name:    "list element renamed",
			desired: replaceOnce(desiredDeploy, "name: web\n        image", "name: app\n        image"),
			live:    withManaged(liveDeploy, deployFields),
			want:    []string{`.spec.template.spec.containers[name="app"]`, `.spec.template.spec.containers[name="web"]`},
		},
		{
			// A CRD's spec.versions is an atomic list: Annex's entry names
			// the list, not its elements. A version dropped from desired
			// is drift, though every desired element is still live.
			name: "atomic list shrank",
			desired: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  versions: [{name: v2, served: true, storage: true}]`,
			live: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
  ` + managedBy(`{"f:spec": {"f:versions": {}}}`) + `
spec:
  versions: [{name: v1, served: false, storage: false}, {name: v2, served: true, storage: true}]`,
			want: []string{".spec.versions"},
		},
		{
			// No apply entry of Annex: it owns nothing yet.
			name:    "not managed by annex",
			desired: desiredCM,
			live:    desiredCM,
			want:    []string{".metadata.managedFields"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := drifted(mustObject(t, tt.desired), mustObject(t, tt.live))
			if !slices.Equal(got, tt.want) {
				t.Errorf("drifted = %q, want %q", got, tt.want)
			}
		})
	}
}

func withReplicas(doc, replicas string) string {
	return replaceOnce(doc, "replicas: 1", "replicas: "+replicas)
}

func replaceOnce(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic("replaceOnce: " + old + " not found")
	}
	return strings.Replace(s, old, new, 1)
}

// newCountingApplier returns an Applier for the shared test API server
// whose requests are counted.
func newCountingApplier(t *testing.T) (*Applier, *reqcount.Counter) {
	t.Helper()
	counter := &reqcount.Counter{}
	a, err := New(counter.Wrap(testConfig(t)))
	if err != nil {
		t.Fatal(err)
	}
	return a, counter
}

func serviceDoc(ns, name string) string {
	return fmt.Sprintf(`{apiVersion: v1, kind: Service, metadata: {name: %s, namespace: %q}, spec: {selector: {app: web}, ports: [{name: http, port: 80, targetPort: 8080}]}}`, name, ns)
}

func TestDiff(t *testing.T) {
	a, counter := newCountingApplier(t)
	ctx := t.Context()
	const ns = "diff"
	createNamespace(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}
	set := Set{Objects: objects(t,
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: web}}`,
		deploymentDoc("", 0), configMapDoc("", "settings", "a"), serviceDoc("", "web"),
		// Hooks are not compared.
		hookDoc("migrate", "pre-install", ""),
	)}
	if _, err := a.Apply(ctx, owner, ns, set); err != nil {
		t.Fatal(err)
	}

	// Nothing drifted: Diff and a second Apply write nothing.
	before := counter.Snapshot()
	drifts, health, err := a.Diff(ctx, owner, set, ns)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	if len(drifts) != 0 {
		t.Errorf("Diff of an unchanged set = %+v, want none", drifts)
	}
	if !health.Ready || health.Total != 4 {
		t.Errorf("Diff's health of the 4 regular objects = %q (ready %v), want all ready", health.Summary(), health.Ready)
	}
	if _, err := a.Apply(ctx, owner, ns, set); err != nil {
		t.Fatal(err)
	}
	used := counter.Snapshot().Sub(before)
	if used.Writes != 0 {
		t.Errorf("Diff and Apply of an unchanged set made %d writes (%v), want 0", used.Writes, used.ByMethod)
	}
	t.Logf("Diff and Apply of an unchanged set: requests by method %v", used.ByMethod)

	// Another manager takes a field; someone deletes the Service.
	theirs := mustObject(t, configMapDoc(ns, "settings", "theirs"))
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(theirs), client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	svc := read(t, a, ref("", "v1", "Service", ns, "web"))
	if err := a.Client.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	before = counter.Snapshot()
	drifts, health, err = a.Diff(ctx, owner, set, ns)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	if want := "1 of 4 objects not ready: Service diff/web: object not found"; health.Summary() != want {
		t.Errorf("Diff's health with the Service deleted = %q, want %q", health.Summary(), want)
	}
	want := []Drift{
		{Object: ref("", "v1", "ConfigMap", ns, "settings"), Fields: []string{".data.key"}},
		{Object: ref("", "v1", "Service", ns, "web"), Missing: true},
	}
	if !reflect.DeepEqual(drifts, want) {
		t.Errorf("Diff =\n%+v\nwant\n%+v", drifts, want)
	}
	if used := counter.Snapshot().Sub(before); used.Writes != 0 {
		t.Errorf("Diff made %d writes (%v), want 0", used.Writes, used.ByMethod)
	}
	if v, _, _ := unstructured.NestedString(read(t, a, ref("", "v1", "ConfigMap", ns, "settings")).Object, "data", "key"); v != "theirs" {
		t.Errorf("data.key = %q after Diff, want it untouched", v)
	}
}
