package adopt

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

const renderedDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team-a, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
        resources: {requests: {cpu: "0.5", memory: 64Mi}}
`

// liveDeployment is renderedDeployment as the API server returns it:
// server-set metadata, defaults, status, another manager's annotation.
const liveDeployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: team-a
  uid: 0c3e
  resourceVersion: "812"
  generation: 1
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels: {app: web, app.kubernetes.io/managed-by: Helm}
  annotations: {deployment.kubernetes.io/revision: "1", meta.helm.sh/release-name: web}
  managedFields: [{manager: helm, operation: Update}]
spec:
  replicas: 2
  revisionHistoryLimit: 10
  progressDeadlineSeconds: 600
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate}
  template:
    metadata: {labels: {app: web}}
    spec:
      restartPolicy: Always
      containers:
      - name: web
        image: nginx:1.27
        imagePullPolicy: IfNotPresent
        ports: [{containerPort: 80, protocol: TCP}]
        resources: {requests: {cpu: 500m, memory: 64Mi}}
        terminationMessagePath: /dev/termination-log
status: {replicas: 2, readyReplicas: 2}
`

func TestDiff(t *testing.T) {
	for _, c := range []struct {
		name           string
		rendered, live string
		want           []string // FieldDiff.String() of each difference
	}{
		// Server-set metadata, defaults, status and other managers'
		// fields are not differences; "0.5" CPU is "500m".
		{"unchanged", renderedDeployment, liveDeployment, nil},
		// Scaled and re-imaged by hand.
		{"edited", renderedDeployment,
			strings.NewReplacer("replicas: 2\n  revision", "replicas: 5\n  revision", "image: nginx:1.27", "image: nginx:1.28").Replace(liveDeployment),
			[]string{`.spec.replicas: 5 → 2`, `.spec.template.spec.containers[name="web"].image: "nginx:1.28" → "nginx:1.27"`}},
		// A label the render sets was removed live.
		{"label removed", renderedDeployment, strings.Replace(liveDeployment, "labels: {app: web, app.kubernetes.io/managed-by: Helm}", "labels: {app.kubernetes.io/managed-by: Helm}", 1),
			[]string{`.metadata.labels.app: (unset) → "web"`}},
		// A container renamed: the rendered one is missing from the list.
		{"container renamed", renderedDeployment, strings.Replace(liveDeployment, "- name: web", "- name: app", 1),
			[]string{`.spec.template.spec.containers[name="web"]: (unset) → {"image":"nginx:1.27","name":"web","ports":[{"containerPort":80}],"resources":{"requests":{"cpu":"0.5","memory":"64Mi"}}}`}},
		// ConfigMap data: strings compare exactly, keys added live are not Annex's.
		{"configmap", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"1\", b: x}",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: \"1.0\", b: x, c: extra}",
			[]string{`.data.a: "1.0" → "1"`}},
		// A list of scalars must be equal, and a list of unnamed objects of
		// another length differs as a whole.
		{"lists", "kind: Service\nmetadata: {name: s}\nspec: {ipFamilies: [IPv4], ports: [{port: 80}, {port: 81}]}",
			"kind: Service\nmetadata: {name: s}\nspec: {ipFamilies: [IPv6], ports: [{port: 80, protocol: TCP}]}",
			[]string{`.spec.ipFamilies: ["IPv6"] → ["IPv4"]`, `.spec.ports: [{"port":80,"protocol":"TCP"}] → [{"port":80},{"port":81}]`}},
		// A Secret's stringData is what the server stores as data.
		{"secret stringData", "kind: Secret\napiVersion: v1\nmetadata: {name: s}\nstringData: {password: hunter2}\ntype: Opaque",
			"kind: Secret\napiVersion: v1\nmetadata: {name: s}\ndata: {password: aHVudGVyMg==}\ntype: Opaque", nil},
		// A Secret's values are never shown, only that they differ.
		{"secret differs", "kind: Secret\napiVersion: v1\nmetadata: {name: s}\nstringData: {password: hunter2, user: admin}",
			"kind: Secret\napiVersion: v1\nmetadata: {name: s}\ndata: {password: b3RoZXI=}",
			[]string{`.data.password: "(hidden)" → "(hidden)"`, `.data.user: (unset) → "(hidden)"`}},
		// A null in the render asks for nothing.
		{"null", "kind: ConfigMap\nmetadata: {name: c, annotations: null}\ndata: {a: x}", "kind: ConfigMap\nmetadata: {name: c, annotations: {k: v}}\ndata: {a: x}", nil},
	} {
		var got []string
		for _, d := range Diff(obj(t, c.rendered), obj(t, c.live)) {
			got = append(got, d.String())
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	cm := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: team-a}\ndata: {a: x}")
	cmLive := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: team-a, uid: u}\ndata: {a: z}")
	svc := obj(t, "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: team-a}\nspec: {ports: [{port: 80}]}")
	dep := obj(t, renderedDeployment)
	depLive := obj(t, liveDeployment)
	hook := obj(t, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate, namespace: team-a, annotations: {helm.sh/hook: pre-upgrade}}")
	old := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: web-old, namespace: team-a}")

	got := Compare(
		[]*unstructured.Unstructured{svc, cm, dep, hook},
		[]*unstructured.Unstructured{cmLive, depLive},
		// The release's manifest: the ConfigMap, the Deployment, and a
		// Secret the chart no longer renders.
		[]*unstructured.Unstructured{cm, dep, old})
	want := Comparison{Hooks: 1, Objects: []ObjectComparison{
		{Object: Ref{Kind: "ConfigMap", Namespace: "team-a", Name: "web"}, State: Differs, Fields: []FieldDiff{{Path: ".data.a", Live: "z", Render: "x"}}, UID: "u"},
		{Object: Ref{Kind: "Secret", Namespace: "team-a", Name: "web-old"}, State: Extra},
		{Object: Ref{Kind: "Service", Namespace: "team-a", Name: "web"}, State: Missing},
		{Object: Ref{Group: "apps", Kind: "Deployment", Namespace: "team-a", Name: "web"}, State: Same, UID: depLive.GetUID()},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compare:\n got %+v\nwant %+v", got, want)
	}
	if got.Count(Same) != 1 || got.Count(Differs) != 1 || got.Count(Missing) != 1 || got.Count(Extra) != 1 {
		t.Errorf("Count: %+v", got)
	}
	if s := want.Objects[3].Object.String(); s != "Deployment.apps team-a/web" {
		t.Errorf("Ref.String: %q", s)
	}
}

func TestParseManifestAndPlace(t *testing.T) {
	manifest := `---
# Source: web/templates/ns.yaml
apiVersion: v1
kind: Namespace
metadata:
  name: web-system
---
# Source: web/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
data:
  n: "1"
---
# Source: web/templates/empty.yaml
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: other
  namespace: elsewhere
`
	objs, err := ParseManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	namespaced := func(gvk schema.GroupVersionKind) (bool, error) {
		switch gvk.Kind {
		case "Namespace":
			return false, nil
		case "ConfigMap":
			return true, nil
		}
		return false, errors.New("not served")
	}
	if err := Place(objs, "team-a", namespaced); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, RefOf(o).String())
	}
	if want := []string{"Namespace web-system", "ConfigMap team-a/web", "ConfigMap elsewhere/other"}; !reflect.DeepEqual(got, want) {
		t.Errorf("placed %q, want %q", got, want)
	}
	// A kind the cluster does not serve is named.
	bad := []*unstructured.Unstructured{obj(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}")}
	if err := Place(bad, "team-a", namespaced); err == nil || err.Error() != "Widget.example.com w: not served" {
		t.Errorf("Place of an unserved kind: %v", err)
	}
	if _, err := ParseManifest("kind: ConfigMap\n---\n- a\n"); err == nil || !strings.Contains(err.Error(), "manifest document 1: kind and metadata.name are required") {
		t.Errorf("ParseManifest of a nameless object: %v", err)
	}
}

// Check refuses, with what to change, an installation that would not
// render the release as it is; Foreign names the objects of other
// installations; Summary counts the comparison in words.
func TestCheckForeignSummary(t *testing.T) {
	rel := &Release{Name: "web", Namespace: "team-a", Revision: 3, Chart: "web", ChartVersion: "1.2.0"}
	self := Installation{Extension: "web", Version: "v1.2.0", TargetNamespace: "team-a", Name: "web", Namespace: "team-a"}
	for _, c := range []struct {
		name   string
		change func(*Installation)
		want   string // "" for no error
	}{
		// The same chart, version (as semver: v1.2.0 is 1.2.0) and namespace.
		{"matches", func(*Installation) {}, ""},
		{"another chart", func(i *Installation) { i.Extension = "site" },
			`Helm release team-a/web revision 3 is chart "web", not spec.extension "site"; set spec.extension to "web"`},
		{"another version", func(i *Installation) { i.Version = "1.3.0" },
			`Helm release team-a/web revision 3 is chart web 1.2.0, but spec.version resolved 1.3.0; pin spec.version to "1.2.0"`},
		{"another namespace", func(i *Installation) { i.TargetNamespace = "platform" },
			`Helm release team-a/web revision 3 runs in namespace team-a, but the installation renders into platform; set spec.targetNamespace to "team-a"`},
	} {
		inst := self
		c.change(&inst)
		err := Check(rel, inst)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: got %v\nwant %s…", c.name, err, c.want)
		}
	}

	mine := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: team-a, labels: {app.kubernetes.io/managed-by: annex, annex.dev/installation: web, annex.dev/installation-namespace: team-a}}")
	theirs := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: team-a, labels: {app.kubernetes.io/managed-by: annex, annex.dev/installation: site, annex.dev/installation-namespace: team-b}}")
	helms := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: team-a, labels: {app.kubernetes.io/managed-by: Helm}}")
	if got := Foreign([]*unstructured.Unstructured{mine, theirs, helms}, self); !reflect.DeepEqual(got, []string{"ConfigMap team-a/b (installation team-b/site)"}) {
		t.Errorf("Foreign: %q", got)
	}

	cmp := Comparison{Objects: []ObjectComparison{{State: Same}, {State: Same}, {State: Differs}, {State: Extra}}}
	if got := cmp.Summary(); got != "2 same, 1 differ (corrected), 1 extra (left alone, not adopted)" {
		t.Errorf("Summary: %q", got)
	}
}
