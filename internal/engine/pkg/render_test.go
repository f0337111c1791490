package pkg

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/internal/plan"
)

// dumpPlan prints a rendered plan and its warnings for golden files.
func dumpPlan(t *testing.T, p plan.Plan, warnings []string) []byte {
	t.Helper()
	type task struct {
		Name       string           `json:"name"`
		Kind       plan.TaskKind    `json:"kind"`
		Objects    []map[string]any `json:"objects,omitempty"`
		Pipe       map[string]any   `json:"pipe,omitempty"`
		Dependency *plan.Dependency `json:"dependency,omitempty"`
		Dummy      *plan.Dummy      `json:"dummy,omitempty"`
	}
	type step struct {
		Name  string `json:"name"`
		Tasks []task `json:"tasks"`
	}
	type phase struct {
		Name     string        `json:"name"`
		Strategy plan.Strategy `json:"strategy"`
		Steps    []step        `json:"steps"`
	}
	view := struct {
		Name     string        `json:"name"`
		Strategy plan.Strategy `json:"strategy"`
		Phases   []phase       `json:"phases"`
		Warnings []string      `json:"warnings,omitempty"`
	}{Name: p.Name, Strategy: p.Strategy, Warnings: warnings}
	for _, ph := range p.Phases {
		vph := phase{Name: ph.Name, Strategy: ph.Strategy}
		for _, st := range ph.Steps {
			vst := step{Name: st.Name}
			for _, tk := range st.Tasks {
				vt := task{Name: tk.Name, Kind: tk.Kind, Dependency: tk.Dependency, Dummy: tk.Dummy}
				for _, o := range tk.Objects {
					vt.Objects = append(vt.Objects, o.Object)
				}
				if tk.Pipe != nil {
					vt.Pipe = map[string]any{"pod": tk.Pipe.Pod.Object, "files": tk.Pipe.Files}
				}
				vst.Tasks = append(vst.Tasks, vt)
			}
			vph.Steps = append(vph.Steps, vst)
		}
		view.Phases = append(view.Phases, vph)
	}
	out, err := yaml.Marshal(view)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRenderPlanGolden(t *testing.T) {
	tests := []struct {
		name, pkg, plan string
		values          map[string]any
	}{
		// Every task kind, with defaults: the monitoring Toggle is off, so
		// a Delete; the Pipe names reach the StatefulSet through .Pipes.
		{"full-deploy", "full", "deploy", nil},
		// The Toggle on, an optional parameter set, lists and maps given.
		{"full-deploy-values", "full", "deploy", map[string]any{
			"MONITORING": true, "STORAGE_CLASS": "fast", "NODE_COUNT": 5.0,
			"JVM_OPTS": []any{"-Xmx1g"}, "LABELS": map[string]any{"team": "data", "cost": 1000000.0},
		}},
		// .Pipes is empty in a plan without Pipe tasks.
		{"full-update", "full", "update", nil},
		// A serial plan: Delete then Apply of one Job.
		{"full-backup", "full", "backup", map[string]any{"BACKUP_NAME": "before-upgrade"}},
		// Strategy left out is parallel.
		{"full-cleanup", "full", "cleanup", nil},
		// A KUDO 0.7 package renders as it did.
		{"legacy-deploy", "legacy", "deploy", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadDir(os.DirFS("testdata/packages/" + tt.pkg))
			if err != nil {
				t.Fatal(err)
			}
			params, err := Resolve(p, tt.values, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, warnings, err := RenderPlan(p, tt.plan, Input{Instance: "cass", Namespace: "data", Params: params, KubeVersion: "1.30.0"})
			if err != nil {
				t.Fatal(err)
			}
			checkGoldenFile(t, "render/"+tt.name+".golden", dumpPlan(t, got, warnings))
		})
	}
}

// renderPackage is a small package to break in one place per test.
func renderPackage() *Package {
	return &Package{
		Operator: Operator{
			Name: "demo", OperatorVersion: "0.1.0", AppVersion: "1.0",
			Tasks: []Task{
				{Name: "app", Kind: KindApply, Spec: TaskSpec{Resources: []string{"deploy.yaml"}}},
			},
			Plans: map[string]PlanSpec{
				"deploy": {Strategy: "serial", Phases: []Phase{{Name: "main", Steps: []Step{{Name: "app", Tasks: []string{"app"}}}}}},
			},
		},
		Params: Params{Parameters: []Param{{Name: "REPLICAS", Type: TypeInteger, Default: "2"}, {Name: "ON", Type: TypeBoolean, Default: "true"}}},
		Templates: map[string]string{
			"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
spec:
  replicas: {{ .Params.REPLICAS }}
  template:
    spec:
      containers:
        - name: app
          image: app:1
        - name: sidecar
          image: side:1
`,
		},
	}
}

func renderDemo(t *testing.T, p *Package, planName string) (plan.Plan, []string, error) {
	t.Helper()
	params, err := Resolve(p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return RenderPlan(p, planName, Input{Instance: "demo", Namespace: "ns", Params: params})
}

func TestRenderPlanErrors(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Package)
		plan   string
		// want is the whole error text.
		want string
	}{
		{"missing plan", nil, "backup",
			`render plan "backup": package demo has no plan "backup"; its plans are deploy`},
		{"missing task", func(p *Package) { p.Operator.Tasks = nil }, "",
			`render plan "deploy", task "app": phase "main" step "app" names task "app", which operator.yaml does not define; add it to tasks or fix the step`},
		{"missing template", func(p *Package) { delete(p.Templates, "deploy.yaml") }, "",
			`render plan "deploy", task "app", template deploy.yaml: template "deploy.yaml" is not in the package; add templates/deploy.yaml or fix the task`},
		// Template errors keep the template's line.
		{"missing key", func(p *Package) { p.Templates["deploy.yaml"] = "a: 1\nb: {{ .Params.NOPE }}\n" }, "",
			`render plan "deploy", task "app": deploy.yaml:2:13: executing "deploy.yaml" at <.Params.NOPE>: map has no entry for key "NOPE"; declare the parameter in params.yaml or fix the template`},
		{"parse error", func(p *Package) { p.Templates["deploy.yaml"] = "a: 1\nb: {{ .Name \n" }, "",
			`render plan "deploy", task "app": deploy.yaml:3: unclosed action started at deploy.yaml:2`},
		// Removed functions are not there.
		{"env removed", func(p *Package) { p.Templates["deploy.yaml"] = `{{ env "HOME" }}` }, "",
			`render plan "deploy", task "app": deploy.yaml:1: function "env" not defined`},
		{"bad output", func(p *Package) { p.Templates["deploy.yaml"] = "kind: A\nmetadata: [\n" }, "",
			`render plan "deploy", task "app", template deploy.yaml: document 1 (output line 1) is not valid YAML: yaml: line 2: did not find expected node content`},
		{"no name", func(p *Package) { p.Templates["deploy.yaml"] = "a: 1\n---\napiVersion: v1\nkind: ConfigMap\n" }, "",
			`render plan "deploy", task "app", template deploy.yaml: document 1 (output line 1) has no apiVersion, kind, metadata.name; every object needs apiVersion, kind and metadata.name`},
		{"unknown kind", func(p *Package) { p.Operator.Tasks[0].Kind = "Helm" }, "",
			`render plan "deploy", task "app": task kind "Helm" is unknown; use Apply, Delete, Toggle, Pipe, KudoOperator or Dummy`},
		{"unmerged", func(p *Package) { p.Operator.Tasks[0] = Task{Name: "app", From: "base/app"} }, "",
			`render plan "deploy", task "app": task copies base/app but has no kind: merge the package onto its base before rendering`},
		{"toggle not boolean", func(p *Package) {
			p.Operator.Tasks[0].Kind, p.Operator.Tasks[0].Spec.Parameter = KindToggle, "REPLICAS"
		}, "", `render plan "deploy", task "app": Toggle parameter REPLICAS is "2", not a boolean; set it to true or false`},
		{"toggle no parameter", func(p *Package) { p.Operator.Tasks[0].Kind = KindToggle }, "",
			`render plan "deploy", task "app": Toggle task needs spec.parameter naming a boolean parameter; "" is not a parameter`},
		{"pipe not a pod", func(p *Package) {
			p.Operator.Tasks[0] = Task{Name: "app", Kind: KindPipe, Spec: TaskSpec{Pod: "deploy.yaml", Pipe: []PipeSpec{{File: "/f", Kind: "Secret", Key: "k"}}}}
		}, "", `render plan "deploy", task "app", template deploy.yaml: a Pipe task's pod template must render exactly one v1 Pod (got 1 objects)`},
		{"pipe key", func(p *Package) {
			p.Templates["pod.yaml"] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
			p.Operator.Tasks[0] = Task{Name: "app", Kind: KindPipe, Spec: TaskSpec{Pod: "pod.yaml", Pipe: []PipeSpec{{File: "/f", Kind: "Secret", Key: "a.b"}}}}
		}, "", `render plan "deploy", task "app": pipe key "a.b" must match ^[a-zA-Z0-9_-]+$; rename it`},
		{"pipe kind", func(p *Package) {
			p.Templates["pod.yaml"] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
			p.Operator.Tasks[0] = Task{Name: "app", Kind: KindPipe, Spec: TaskSpec{Pod: "pod.yaml", Pipe: []PipeSpec{{File: "/f", Kind: "Volume", Key: "k"}}}}
		}, "", `render plan "deploy", task "app": pipe k has kind "Volume"; use Secret or ConfigMap`},
		{"pipe key twice", func(p *Package) {
			pipe := Task{Kind: KindPipe, Spec: TaskSpec{Pod: "pod.yaml", Pipe: []PipeSpec{{File: "/f", Kind: "Secret", Key: "k"}}}}
			a, b := pipe, pipe
			a.Name, b.Name = "a", "b"
			p.Operator.Tasks = []Task{a, b}
			p.Operator.Plans["deploy"].Phases[0].Steps[0].Tasks = []string{"a", "b"}
		}, "", `render plan "deploy", task "b": pipe key "k" is used twice in the plan; .Pipes.k would be ambiguous: rename one`},
		{"dependency without package", func(p *Package) { p.Operator.Tasks[0] = Task{Name: "app", Kind: KindKudoOperator} }, "",
			`render plan "deploy", task "app": KudoOperator task has no spec.package; name the package it depends on`},
		{"patches on dummy", func(p *Package) {
			p.Operator.Tasks[0] = Task{Name: "app", Kind: KindDummy, Patches: []string{"deploy.yaml"}}
		}, "",
			`render plan "deploy", task "app": patches apply to the objects of Apply, Delete, Toggle and Pipe tasks; a Dummy task has none: remove them`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := renderPackage()
			if tt.change != nil {
				tt.change(p)
			}
			planName := tt.plan
			if planName == "" {
				planName = "deploy"
			}
			_, _, err := renderDemo(t, p, planName)
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v (%T), want a *RenderError", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("err =\n%s\nwant\n%s", err, tt.want)
			}
		})
	}
}

func TestRenderPlanShapes(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *Package)
		check  func(t *testing.T, got plan.Plan, warnings []string)
	}{
		// A plan without phases is complete at once.
		{"no phases", func(p *Package) { p.Operator.Plans["deploy"] = PlanSpec{} }, func(t *testing.T, got plan.Plan, _ []string) {
			if !reflect.DeepEqual(got, plan.Plan{Name: "deploy", Strategy: plan.Parallel}) {
				t.Errorf("plan = %+v", got)
			}
		}},
		// Only "serial" is serial.
		{"strategies", func(p *Package) {
			pl := p.Operator.Plans["deploy"]
			pl.Strategy, pl.Phases[0].Strategy = "Serial", "serial"
			p.Operator.Plans["deploy"] = pl
		}, func(t *testing.T, got plan.Plan, _ []string) {
			if got.Strategy != plan.Parallel || got.Phases[0].Strategy != plan.Serial {
				t.Errorf("strategies = %s, %s", got.Strategy, got.Phases[0].Strategy)
			}
		}},
		// A dependency on an exact operatorVersion, else appVersion; fields
		// Annex does not use are named in a warning.
		{"dependency", func(p *Package) {
			p.Operator.Tasks = append(p.Operator.Tasks,
				Task{Name: "zk", Kind: KindKudoOperator, Spec: TaskSpec{Package: "zookeeper", AppVersion: "3.6", InstanceName: "zk"}})
			p.Operator.Plans["deploy"].Phases[0].Steps[0].Tasks = []string{"zk"}
		}, func(t *testing.T, got plan.Plan, warnings []string) {
			dep := got.Phases[0].Steps[0].Tasks[0]
			if dep.Kind != plan.TaskDependency || *dep.Dependency != (plan.Dependency{Extension: "zookeeper", Version: "=3.6"}) {
				t.Errorf("task = %+v", dep)
			}
			want := []string{"task zk: instanceName and parameterFile are ignored: a dependency is its own installation of zookeeper, with its own values"}
			if !reflect.DeepEqual(warnings, want) {
				t.Errorf("warnings = %q", warnings)
			}
		}},
		// A cluster older than kubernetesVersion is a warning.
		{"old cluster", func(p *Package) { p.Operator.KubernetesVersion = "1.40.0" }, func(t *testing.T, _ plan.Plan, warnings []string) {
			want := []string{"package demo wants Kubernetes 1.40.0 or later; the cluster runs 1.30.2"}
			if !reflect.DeepEqual(warnings, want) {
				t.Errorf("warnings = %q", warnings)
			}
		}},
		// Templates may `set` on .Params without touching the caller's map.
		{"params copied", func(p *Package) {
			p.Templates["deploy.yaml"] = `{{ $_ := set .Params "REPLICAS" "9" }}apiVersion: v1
kind: ConfigMap
metadata:
  name: "{{ .Params.REPLICAS }}"`
		}, func(t *testing.T, got plan.Plan, _ []string) {
			if name := got.Phases[0].Steps[0].Tasks[0].Objects[0].GetName(); name != "9" {
				t.Errorf("name = %q", name)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := renderPackage()
			tt.change(p)
			params, err := Resolve(p, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, warnings, err := RenderPlan(p, "deploy", Input{Instance: "demo", Namespace: "ns", Params: params, KubeVersion: "1.30.2"})
			if err != nil {
				t.Fatal(err)
			}
			if params["REPLICAS"] != "2" {
				t.Errorf("caller's params changed: %v", params)
			}
			tt.check(t, got, warnings)
		})
	}
}

func TestRenderPatches(t *testing.T) {
	crd := "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: demo\nspec:\n  size: 1\n  tags: [a]\n"
	tests := []struct {
		name string
		// patch is the patch file's text.
		patch string
		// want is a check of the task's objects, as JSON paths and values.
		want func(t *testing.T, objs []*unstructured.Unstructured)
		// wantWarning and wantErr are exact texts, when expected.
		wantWarning, wantErr string
	}{
		// A strategic-merge patch merges containers by name for a built-in
		// kind: the sidecar stays.
		{name: "strategic", patch: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo
spec:
  replicas: 5
  template:
    spec:
      containers:
        - name: app
          image: app:2
`, want: func(t *testing.T, objs []*unstructured.Unstructured) {
			containers, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "template", "spec", "containers")
			replicas, _, _ := unstructured.NestedInt64(objs[0].Object, "spec", "replicas")
			if len(containers) != 2 || containers[0].(map[string]any)["image"] != "app:2" || replicas != 5 {
				t.Errorf("containers = %v, replicas = %d", containers, replicas)
			}
		}},
		// An unknown kind gets a JSON merge patch: lists are replaced.
		{name: "merge patch", patch: "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: demo\nspec:\n  tags: [b]\n",
			want: func(t *testing.T, objs []*unstructured.Unstructured) {
				tags, _, _ := unstructured.NestedStringSlice(objs[1].Object, "spec", "tags")
				size, _, _ := unstructured.NestedInt64(objs[1].Object, "spec", "size")
				if !reflect.DeepEqual(tags, []string{"b"}) || size != 1 {
					t.Errorf("widget = %v", objs[1].Object)
				}
			}},
		// JSON 6902 with a target, operations as a list.
		{name: "json6902", patch: "target: {kind: Widget, name: demo}\npatch:\n  - {op: replace, path: /spec/size, value: 3}\n  - {op: add, path: /spec/tags/-, value: c}\n",
			want: func(t *testing.T, objs []*unstructured.Unstructured) {
				tags, _, _ := unstructured.NestedStringSlice(objs[1].Object, "spec", "tags")
				size, _, _ := unstructured.NestedInt64(objs[1].Object, "spec", "size")
				if !reflect.DeepEqual(tags, []string{"a", "c"}) || size != 3 {
					t.Errorf("widget = %v", objs[1].Object)
				}
			}},
		// kustomize's inline shape: the operations as text.
		{name: "json6902 text", patch: "target:\n  kind: Deployment\n  name: demo\npatch: |-\n  [{\"op\": \"remove\", \"path\": \"/spec/template/spec/containers/1\"}]\n",
			want: func(t *testing.T, objs []*unstructured.Unstructured) {
				containers, _, _ := unstructured.NestedSlice(objs[0].Object, "spec", "template", "spec", "containers")
				if len(containers) != 1 {
					t.Errorf("containers = %v", containers)
				}
			}},
		// Several patches in one file, in order; templates work in them.
		{name: "multi document", patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Name }}\nspec:\n  replicas: {{ .Params.REPLICAS }}\n---\ntarget: {kind: Deployment, name: demo}\npatch: [{op: test, path: /spec/replicas, value: 2}, {op: add, path: /metadata/labels, value: {patched: \"yes\"}}]\n",
			want: func(t *testing.T, objs []*unstructured.Unstructured) {
				if objs[0].GetLabels()["patched"] != "yes" {
					t.Errorf("deployment = %v", objs[0].Object)
				}
			}},
		// $patch: delete drops the object from the task.
		{name: "delete", patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: demo\n$patch: delete\n",
			want: func(t *testing.T, objs []*unstructured.Unstructured) {
				if len(objs) != 1 || objs[0].GetKind() != "Widget" {
					t.Errorf("objects = %v", objs)
				}
			}},
		// A patch that matches nothing says so.
		{name: "no match", patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: other\nspec:\n  replicas: 1\n",
			wantWarning: "task app: patch patch.yaml matches no resource (kind Deployment, name other); check its kind and name against the objects of the task's resources"},
		// A list of operations does not say what it patches.
		{name: "bare list", patch: "- {op: replace, path: /spec/replicas, value: 3}\n",
			wantErr: "render plan \"deploy\", task \"app\", template patch.yaml: document 1 (output line 1): is a JSON 6902 patch without a target; write `target: {kind: <kind>, name: <name>}` and put the operations under `patch:`"},
		{name: "target without name", patch: "target: {kind: Widget}\npatch: []\n",
			wantErr: "render plan \"deploy\", task \"app\", template patch.yaml: document 1 (output line 1): target needs kind and name: write `target: {kind: <kind>, name: <name>}`"},
		{name: "neither", patch: "spec:\n  replicas: 3\n",
			wantErr: "render plan \"deploy\", task \"app\", template patch.yaml: document 1 (output line 1): is neither a strategic-merge patch (an object with apiVersion, kind and metadata.name) nor a JSON 6902 patch (target: {kind, name} and patch: [operations])"},
		{name: "failing operation", patch: "target: {kind: Widget, name: demo}\npatch: [{op: remove, path: /spec/missing}]\n",
			wantErr: "render plan \"deploy\", task \"app\", template patch.yaml: patching Widget demo: error in remove for path: '/spec/missing': unable to remove nonexistent key: missing: missing value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := renderPackage()
			p.Templates["widget.yaml"] = crd
			p.Templates["patch.yaml"] = tt.patch
			p.Operator.Tasks[0].Spec.Resources = []string{"deploy.yaml", "widget.yaml"}
			p.Operator.Tasks[0].Patches = []string{"patch.yaml"}
			got, warnings, err := renderDemo(t, p, "deploy")
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err =\n%v\nwant\n%s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantWarning != "" {
				if !reflect.DeepEqual(warnings, []string{tt.wantWarning}) {
					t.Errorf("warnings = %q", warnings)
				}
			} else if len(warnings) > 0 {
				t.Errorf("unexpected warnings %q", warnings)
			}
			if tt.want != nil {
				tt.want(t, got.Phases[0].Steps[0].Tasks[0].Objects)
			}
		})
	}
}

func TestPipeName(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name  string
		parts [6]string
		want  string
	}{
		// The KUDO order: instance, plan, phase, step, task, key.
		{"plain", [6]string{"cass", "deploy", "nodes", "certs", "gen-cert", "cert"}, "cass.deploy.nodes.certs.gen-cert.cert"},
		// Lowercased; '_' and other characters become '-', trimmed at the
		// ends of labels.
		{"sanitised", [6]string{"Cass", "deploy", "Main Phase", "step_1", "_t_", "node_env"}, "cass.deploy.main-phase.step-1.t.node-env"},
		// Empty labels are dropped.
		{"empty", [6]string{"", "deploy", "", "s", "t", "k"}, "deploy.s.t.k"},
		// Too long: cut, with a hash of the whole.
		{"long", [6]string{long, "deploy", "p", "s", "t", "k"}, strings.Repeat("x", 244) + "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PipeName(tt.parts[0], tt.parts[1], tt.parts[2], tt.parts[3], tt.parts[4], tt.parts[5])
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("%q is not a DNS subdomain: %v", got, errs)
			}
			if tt.name == "long" {
				if !strings.HasPrefix(got, tt.want) || len(got) != 253 {
					t.Errorf("got %q (%d)", got, len(got))
				}
				if again := PipeName(tt.parts[0], tt.parts[1], tt.parts[2], tt.parts[3], tt.parts[4], tt.parts[5]); again != got {
					t.Errorf("not stable: %q then %q", got, again)
				}
				return
			}
			if got != tt.want {
				t.Errorf("PipeName = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseObjects(t *testing.T) {
	tests := []struct {
		name string
		text string
		// want are kind/name pairs; wantErr an exact error.
		want    []string
		wantErr string
	}{
		// Documents in order; empty, comment-only and `{}` ones skipped.
		{"several", "# header\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\n--- # note\napiVersion: x/v1\nkind: Thing\nmetadata: {name: b}\n---\n# only a comment\n", []string{"ConfigMap/a", "Thing/b"}, ""},
		// "----" is not a separator.
		{"dashes in data", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  x: |\n    ----\n    ---\n", []string{"ConfigMap/a"}, ""},
		// Integers are int64 as unstructured wants them; YAML 1.1 on/yes
		// are booleans as kubectl reads them.
		{"numbers", "apiVersion: v1\nkind: X\nmetadata: {name: a}\nspec: {n: 3, f: 1.5}\n", []string{"X/a"}, ""},
		{"not an object", "apiVersion: v1\nkind: X\nmetadata: {name: a}\n---\n- 1\n", nil,
			"document 2 (output line 5) is [1], not an object; a template renders Kubernetes objects"},
		{"no kind", "apiVersion: v1\nmetadata: {name: a}\n", nil,
			"document 1 (output line 1) has no kind; every object needs apiVersion, kind and metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := ParseObjects(tt.text)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
				// DeepCopy panics on values unstructured does not allow.
				o.DeepCopy()
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("objects = %v, want %v", got, tt.want)
			}
		})
	}
}
