package pkg

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/internal/plan"
)

// kepBase is a small stand-in for the base of KEP-0012's example: KUDO's
// mysql package, operatorVersion 0.3.0, appVersion 5.7, with its init,
// deploy, backup, restore and pv tasks, and the KEP's two parameters.
func kepBase() *Package {
	return &Package{
		Operator: Operator{
			APIVersion: APIVersion, Name: "mysql", OperatorVersion: "0.3.0", AppVersion: "5.7",
			Description: "MySQL", KubernetesVersion: "1.15.0", URL: "https://mysql.example",
			Maintainers: []Maintainer{{Name: "Base Maintainer"}},
			Tasks: []Task{
				kepApply("init", "init.yaml"),
				kepApply("deploy", "service.yaml", "statefulset.yaml"),
				kepApply("backup", "backup-pv.yaml", "backup.yaml"),
				kepApply("restore", "restore.yaml"),
				kepApply("pv", "backup-pv.yaml"),
			},
			Plans: map[string]PlanSpec{
				"deploy":  kepPlan("deploy", "init", "deploy"),
				"backup":  kepPlan("backup", "backup"),
				"restore": kepPlan("restore", "restore"),
			},
		},
		Params: Params{APIVersion: APIVersion, Parameters: []Param{
			{Name: "BACKUP", Default: "backup.sql", Description: "The file the backup job saves the sql dump, and the file the restore occurs from."},
			{Name: "PASSWORD", Default: "password", Description: "Some words"},
		}},
		Templates: map[string]string{
			"init.yaml": "base init", "service.yaml": "base service", "statefulset.yaml": "base statefulset",
			"backup-pv.yaml": "base backup-pv", "backup.yaml": "base backup", "restore.yaml": "base restore",
		},
	}
}

// kepExtension extends kepBase and defines nothing of its own.
func kepExtension() *Package {
	return &Package{
		Operator: Operator{
			APIVersion: APIVersion, Name: "mysql-analytics", OperatorVersion: "1.0.0",
			Extends: &Extends{Operator: "mysql", Version: "5.7"},
		},
		Templates: map[string]string{},
	}
}

func kepApply(name string, resources ...string) Task {
	return Task{Name: name, Kind: KindApply, Spec: TaskSpec{Resources: resources}}
}

// kepPlan is a plan of one serial phase with one step per task.
func kepPlan(name string, tasks ...string) PlanSpec {
	ph := Phase{Name: name, Strategy: "serial"}
	for _, t := range tasks {
		ph.Steps = append(ph.Steps, Step{Name: t, Tasks: []string{t}})
	}
	return PlanSpec{Strategy: "serial", Phases: []Phase{ph}}
}

func mergedTask(t *testing.T, p *Package, name string) Task {
	t.Helper()
	task, ok := taskByName(p.Operator.Tasks, name)
	if !ok {
		t.Fatalf("merged package has no task %s", name)
	}
	return task
}

func mergedTaskNames(p *Package) []string {
	var out []string
	for _, t := range p.Operator.Tasks {
		out = append(out, t.Name)
	}
	return out
}

func mergedParam(t *testing.T, p *Package, name string) Param {
	t.Helper()
	for _, prm := range p.Params.Parameters {
		if prm.Name == name {
			return prm
		}
	}
	t.Fatalf("merged package has no parameter %s", name)
	return Param{}
}

func mergeBool(v bool) *bool { return &v }

func mergeEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		base func(*Package) // changes kepBase; nil keeps it
		ext  func(*Package) // changes kepExtension
		// check inspects a successful merge; wantErr lists substrings of
		// the error instead.
		check   func(t *testing.T, p *Package, warnings []string)
		wantErr []string
	}{
		{
			// KEP: an extension that defines nothing has "the EXACT same
			// functionality" as its base; only its name and version differ.
			name: "empty extension inherits everything",
			check: func(t *testing.T, p *Package, warnings []string) {
				b := kepBase()
				mergeEqual(t, "name", p.Operator.Name, "mysql-analytics")
				mergeEqual(t, "operatorVersion", p.Operator.OperatorVersion, "1.0.0")
				mergeEqual(t, "appVersion", p.Operator.AppVersion, "5.7")
				mergeEqual(t, "description", p.Operator.Description, "MySQL")
				mergeEqual(t, "kubernetesVersion", p.Operator.KubernetesVersion, "1.15.0")
				mergeEqual(t, "url", p.Operator.URL, b.Operator.URL)
				mergeEqual(t, "maintainers", p.Operator.Maintainers, b.Operator.Maintainers)
				mergeEqual(t, "tasks", p.Operator.Tasks, b.Operator.Tasks)
				mergeEqual(t, "plans", p.Operator.Plans, b.Operator.Plans)
				mergeEqual(t, "params", p.Params, b.Params)
				mergeEqual(t, "template init.yaml", p.Templates["init.yaml"], "base init")
				mergeEqual(t, "template base/init.yaml", p.Templates["base/init.yaml"], "base init")
				mergeEqual(t, "template count", len(p.Templates), 2*len(b.Templates))
				mergeEqual(t, "warnings", len(warnings), 0)
			},
		},
		{
			// The merged package is self-contained: it extends nothing and
			// must not be merged again.
			name: "result has no extends",
			check: func(t *testing.T, p *Package, _ []string) {
				if p.Operator.Extends != nil {
					t.Errorf("Extends = %+v, want nil", p.Operator.Extends)
				}
			},
		},
		{
			// The extension's own metadata wins; maintainers it lists
			// replace the base's.
			name: "extension metadata wins",
			ext: func(e *Package) {
				e.Operator.AppVersion, e.Operator.Description = "5.7.1", "MySQL for analytics"
				e.Operator.Maintainers = []Maintainer{{Name: "Ext Maintainer"}}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				mergeEqual(t, "appVersion", p.Operator.AppVersion, "5.7.1")
				mergeEqual(t, "description", p.Operator.Description, "MySQL for analytics")
				mergeEqual(t, "maintainers", p.Operator.Maintainers, []Maintainer{{Name: "Ext Maintainer"}})
			},
		},
		{
			// kubernetesVersion is a minimum; the higher of the two wins.
			name: "kubernetesVersion higher than the base's wins",
			ext:  func(e *Package) { e.Operator.KubernetesVersion = "1.30.0" },
			check: func(t *testing.T, p *Package, warnings []string) {
				mergeEqual(t, "kubernetesVersion", p.Operator.KubernetesVersion, "1.30.0")
				mergeEqual(t, "warnings", len(warnings), 0)
			},
		},
		{
			// A lower one than the base's cannot hold: the base's templates
			// still run. It is kept at the base's, with a warning.
			name: "kubernetesVersion lower than the base's keeps the base's",
			ext:  func(e *Package) { e.Operator.KubernetesVersion = "1.10.0" },
			check: func(t *testing.T, p *Package, warnings []string) {
				mergeEqual(t, "kubernetesVersion", p.Operator.KubernetesVersion, "1.15.0")
				wantMergeWarning(t, warnings, "kubernetesVersion 1.10.0 is lower than its base's 1.15.0")
			},
		},
		{
			// KEP "Modifying a Task": a task of the extension replaces the
			// base's of the same name, in place; new tasks follow.
			name: "task replaces the base's in place, new tasks follow",
			ext: func(e *Package) {
				e.Operator.Tasks = []Task{kepApply("load-data", "load.yaml"), kepApply("backup", "my-backup.yaml")}
				e.Templates = map[string]string{"load.yaml": "load", "my-backup.yaml": "my backup"}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				mergeEqual(t, "tasks", mergedTaskNames(p), []string{"init", "deploy", "backup", "restore", "pv", "load-data"})
				mergeEqual(t, "backup resources", mergedTask(t, p, "backup").Spec.Resources, []string{"my-backup.yaml"})
			},
		},
		{
			// KEP: `from: base/init` with patch [init-patch.yaml] equals
			// resources [base/init.yaml] with the same patch: from copies
			// the base task as the base wrote it, under base/.
			name: "from copies the base task under base/ and appends patches",
			ext: func(e *Package) {
				e.Operator.Tasks = []Task{{Name: "init", From: "base/init", Patches: []string{"init-patch.yaml"}}}
				e.Templates = map[string]string{"init-patch.yaml": "patch"}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				want := Task{Name: "init", Kind: KindApply, Spec: TaskSpec{Resources: []string{"base/init.yaml"}}, Patches: []string{"init-patch.yaml"}}
				mergeEqual(t, "init", mergedTask(t, p, "init"), want)
			},
		},
		{
			// KEP: "Resources and patches that overlap with base resource
			// and patch names replace" them: backup.yaml replaces the
			// base's in place, extra.yaml is appended.
			name: "from: own resources replace same-named base ones, others append",
			ext: func(e *Package) {
				e.Operator.Tasks = []Task{{Name: "backup", From: "base/backup", Spec: TaskSpec{Resources: []string{"backup.yaml", "extra.yaml"}}}}
				e.Templates = map[string]string{"backup.yaml": "ext backup", "extra.yaml": "extra"}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				mergeEqual(t, "resources", mergedTask(t, p, "backup").Spec.Resources, []string{"base/backup-pv.yaml", "backup.yaml", "extra.yaml"})
			},
		},
		{
			// The KEP's later text: `clear-data-cleanup` is kind Delete,
			// spec.from base/init. The extension's kind wins and the task
			// may have another name than the one it copies.
			name: "from under another name with the extension's kind",
			ext: func(e *Package) {
				e.Operator.Tasks = []Task{{Name: "clear-data-cleanup", Kind: KindDelete, Spec: TaskSpec{From: "base/init", PatchAlias: []string{"clear-data.yaml"}}}}
				e.Templates = map[string]string{"clear-data.yaml": "clear"}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				want := Task{Name: "clear-data-cleanup", Kind: KindDelete, Spec: TaskSpec{Resources: []string{"base/init.yaml"}}, Patches: []string{"clear-data.yaml"}}
				mergeEqual(t, "clear-data-cleanup", mergedTask(t, p, "clear-data-cleanup"), want)
				mergeEqual(t, "base init kept", mergedTask(t, p, "init"), kepApply("init", "init.yaml"))
			},
		},
		{
			// Replacing a template: the extension's statefulset.yaml is
			// what the inherited deploy task renders; base/statefulset.yaml
			// stays the base's for tasks that ask for it.
			name: "extension template replaces the base's for base tasks too",
			ext: func(e *Package) {
				e.Templates = map[string]string{"statefulset.yaml": "ext statefulset"}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				mergeEqual(t, "deploy resources", mergedTask(t, p, "deploy").Spec.Resources, []string{"service.yaml", "statefulset.yaml"})
				mergeEqual(t, "statefulset.yaml", p.Templates["statefulset.yaml"], "ext statefulset")
				mergeEqual(t, "base/statefulset.yaml", p.Templates["base/statefulset.yaml"], "base statefulset")
			},
		},
		{
			// ...but `from` means the base's task with the base's templates:
			// the copied resource is base/statefulset.yaml.
			name: "from keeps the base's template when the extension replaces it",
			ext: func(e *Package) {
				e.Operator.Tasks = []Task{{Name: "deploy-orig", From: "base/deploy"}}
				e.Templates = map[string]string{"statefulset.yaml": "ext statefulset"}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				mergeEqual(t, "resources", mergedTask(t, p, "deploy-orig").Spec.Resources, []string{"base/service.yaml", "base/statefulset.yaml"})
			},
		},
		{
			// templates/base/ would shadow the base's templates.
			name:    "extension template under base/ is refused",
			ext:     func(e *Package) { e.Templates = map[string]string{"base/init.yaml": "mine"} },
			wantErr: []string{"templates/base/init.yaml", "reserved for its base's templates; move the file"},
		},
		{
			// A from naming a task the base lacks lists the base's tasks.
			name:    "from names a missing base task",
			ext:     func(e *Package) { e.Operator.Tasks = []Task{{Name: "load", From: "base/load"}} },
			wantErr: []string{"task load: from base/load", `the base mysql 0.3.0 has no task "load"`, "its tasks are backup, deploy, init, pv, restore"},
		},
		{
			// from must name the base: "init" alone is ambiguous.
			name:    "from without base/",
			ext:     func(e *Package) { e.Operator.Tasks = []Task{{Name: "init", From: "init"}} },
			wantErr: []string{`task init: from "init" must be base/<task>`},
		},
		{
			// A step must name a task of one of the two packages.
			name: "step names a task neither package defines",
			ext: func(e *Package) {
				e.Operator.Plans = map[string]PlanSpec{"load": kepPlan("load", "load-data")}
			},
			wantErr: []string{"plan load, phase load, step load-data: task load-data", "neither mysql-analytics 1.0.0 nor its base mysql 0.3.0 defines it", "tasks are init, deploy"},
		},
		{
			// A patch path must be a template of the merged package.
			name: "patch names a missing template",
			ext: func(e *Package) {
				e.Operator.Tasks = []Task{{Name: "backup", From: "base/backup", Patches: []string{"pvc-size-patch.yaml"}}}
			},
			wantErr: []string{"task backup: patch pvc-size-patch.yaml", "no templates/pvc-size-patch.yaml in mysql-analytics 1.0.0 or its base mysql 0.3.0"},
		},
		{
			// base/<path> must be a template of the base.
			name: "resource names a missing base template",
			ext: func(e *Package) {
				e.Operator.Tasks = []Task{kepApply("load-data", "base/load.yaml")}
			},
			wantErr: []string{"task load-data: resource base/load.yaml", "the base mysql 0.3.0 has no template load.yaml"},
		},
		{
			// A trigger must name a plan of the merged package.
			name: "trigger names a missing plan",
			ext: func(e *Package) {
				e.Params.Parameters = []Param{{Name: "DATA", Trigger: "load"}}
			},
			wantErr: []string{"parameter DATA: trigger load", "plans are backup, deploy, restore"},
		},
		{
			// A plan of the extension replaces the base's; new ones join.
			name: "plans replace and join",
			ext: func(e *Package) {
				e.Operator.Tasks = []Task{kepApply("load-data", "base/init.yaml")}
				e.Operator.Plans = map[string]PlanSpec{"backup": kepPlan("backup", "pv", "backup"), "load": kepPlan("load", "load-data")}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				mergeEqual(t, "backup", p.Operator.Plans["backup"], kepPlan("backup", "pv", "backup"))
				mergeEqual(t, "load", p.Operator.Plans["load"], kepPlan("load", "load-data"))
				mergeEqual(t, "deploy", p.Operator.Plans["deploy"], kepBase().Operator.Plans["deploy"])
			},
		},
		{
			// An extension plan with no phases and no steps that names a
			// base plan keeps the base's phases; its strategy wins.
			name: "plan without phases keeps the base plan's",
			ext: func(e *Package) {
				e.Operator.Plans = map[string]PlanSpec{"backup": {Strategy: "parallel"}}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				want := kepPlan("backup", "backup")
				want.Strategy = "parallel"
				mergeEqual(t, "backup", p.Operator.Plans["backup"], want)
			},
		},
		{
			// ...and one that names no base plan is an error.
			name:    "new plan without phases",
			ext:     func(e *Package) { e.Operator.Plans = map[string]PlanSpec{"load": {}} },
			wantErr: []string{"plan load has no phases or steps", "the base mysql 0.3.0 has no plan load"},
		},
		{
			// The KEP's plans are written with steps and no phases: one
			// phase named after the plan, steps serial (load, then clean up).
			name: "plan of steps becomes one serial phase",
			ext: func(e *Package) {
				e.Operator.Plans = map[string]PlanSpec{"resize-pv": {Steps: []Step{{Name: "resize", Tasks: []string{"pv"}}}}}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				want := PlanSpec{Strategy: "serial", Phases: []Phase{{Name: "resize-pv", Strategy: "serial", Steps: []Step{{Name: "resize", Tasks: []string{"pv"}}}}}}
				mergeEqual(t, "resize-pv", p.Operator.Plans["resize-pv"], want)
			},
		},
		{
			// The KEP's first text: a `delete: true` step deletes what its
			// tasks apply. It runs "<task>-cleanup" Delete tasks; one of a
			// base task copies it with from.
			name: "delete: true steps run cleanup Delete tasks",
			ext: func(e *Package) {
				e.Operator.Tasks = []Task{kepApply("load-data", "base/init.yaml")}
				e.Operator.Plans = map[string]PlanSpec{"load": {Steps: []Step{
					{Name: "load", Tasks: []string{"load-data"}},
					{Name: "cleanup", Tasks: []string{"load-data", "restore"}, Delete: true},
				}}}
			},
			check: func(t *testing.T, p *Package, warnings []string) {
				steps := p.Operator.Plans["load"].Phases[0].Steps
				mergeEqual(t, "cleanup step", steps[1], Step{Name: "cleanup", Tasks: []string{"load-data-cleanup", "restore-cleanup"}})
				mergeEqual(t, "load-data-cleanup", mergedTask(t, p, "load-data-cleanup"),
					Task{Name: "load-data-cleanup", Kind: KindDelete, Spec: TaskSpec{Resources: []string{"base/init.yaml"}}})
				mergeEqual(t, "restore-cleanup", mergedTask(t, p, "restore-cleanup"),
					Task{Name: "restore-cleanup", Kind: KindDelete, Spec: TaskSpec{Resources: []string{"base/restore.yaml"}}})
				wantMergeWarning(t, warnings, "delete: true is read as Delete tasks load-data-cleanup, restore-cleanup")
			},
		},
		{
			// KEP "Add and Updating Parameters", its example verbatim: a new
			// default keeps the base's description and a new description
			// the base's default; new parameters follow, in order.
			name: "parameters merge field by field",
			ext: func(e *Package) {
				e.Params.Parameters = []Param{
					{Name: "backup", Default: "/path/to/new/location.sql"},
					{Name: "password", Description: "A more detailed description of the parameter"},
					{Name: "data", Default: "/path/to/sample/data.sql", Description: "Storage location of sample data to load"},
				}
			},
			check: func(t *testing.T, p *Package, warnings []string) {
				want := []Param{
					{Name: "BACKUP", Default: "/path/to/new/location.sql", Description: "The file the backup job saves the sql dump, and the file the restore occurs from."},
					{Name: "PASSWORD", Default: "password", Description: "A more detailed description of the parameter"},
					{Name: "data", Default: "/path/to/sample/data.sql", Description: "Storage location of sample data to load"},
				}
				mergeEqual(t, "parameters", p.Params.Parameters, want)
				wantMergeWarning(t, warnings, "parameter backup is the base's BACKUP; the merged package keeps the base's spelling")
			},
		},
		{
			// Pointer fields tell "set to false" from "left out".
			name: "parameter booleans the extension sets win",
			base: func(b *Package) { b.Params.Parameters[0].Immutable = mergeBool(true) },
			ext: func(e *Package) {
				e.Params.Parameters = []Param{{Name: "BACKUP", Required: mergeBool(false)}}
			},
			check: func(t *testing.T, p *Package, _ []string) {
				got := mergedParam(t, p, "BACKUP")
				mergeEqual(t, "required", got.Required, mergeBool(false))
				mergeEqual(t, "immutable", got.Immutable, mergeBool(true))
			},
		},
		{
			// Names are case-insensitive, so two spellings are one name.
			name: "parameter defined twice",
			ext: func(e *Package) {
				e.Params.Parameters = []Param{{Name: "DATA"}, {Name: "data"}}
			},
			wantErr: []string{"parameter data is defined twice (as DATA too"},
		},
		{
			// from means nothing in a package that extends nothing.
			name:    "base task with from",
			base:    func(b *Package) { b.Operator.Tasks[0].From = "base/init" },
			wantErr: []string{"task init: from base/init, but the base mysql 0.3.0 extends nothing to copy it from"},
		},
		{
			// The KEP's own "5.7" is the base's appVersion.
			name: "extends version matches the appVersion",
			ext:  func(e *Package) { e.Operator.Extends.Version = "5.7" },
		},
		{
			// ...and a range over operatorVersion works too.
			name: "extends version matches the operatorVersion",
			ext:  func(e *Package) { e.Operator.Extends.Version = ">=0.3.0 <1.0.0" },
		},
		{
			// A base outside the range is refused, naming both versions.
			name:    "extends version does not match",
			ext:     func(e *Package) { e.Operator.Extends.Version = ">=1.0.0 <2.0.0" },
			wantErr: []string{`extends mysql ">=1.0.0 <2.0.0"`, `neither operatorVersion "0.3.0" nor appVersion "5.7"`},
		},
		{
			// A range that does not parse is its own error.
			name:    "extends version is not a range",
			ext:     func(e *Package) { e.Operator.Extends.Version = "five" },
			wantErr: []string{`extends.version "five" is not a version range`},
		},
		{
			// The base must be the package extends names.
			name:    "extends names another package",
			ext:     func(e *Package) { e.Operator.Extends.Operator = "postgres" },
			wantErr: []string{`extends "postgres", not "mysql"`},
		},
		{
			// The KEP nests the reference under kudo.
			name: "extends.kudo",
			ext: func(e *Package) {
				e.Operator.Extends = &Extends{Kudo: &Extends{Operator: "mysql", Version: "5.7"}}
			},
		},
		{
			// Merge needs an extension.
			name:    "extension without extends",
			ext:     func(e *Package) { e.Operator.Extends = nil },
			wantErr: []string{"mysql-analytics 1.0.0 extends no package"},
		},
		{
			// and an effective base: a chain is merged with MergeChain.
			name:    "base that extends another",
			base:    func(b *Package) { b.Operator.Extends = &Extends{Operator: "mysql-core"} },
			wantErr: []string{`base mysql 0.3.0 extends "mysql-core" itself; merge it onto its own base first (MergeChain)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, ext := kepBase(), kepExtension()
			if tt.base != nil {
				tt.base(base)
			}
			if tt.ext != nil {
				tt.ext(ext)
			}
			got, warnings, err := Merge(base, ext)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Merge succeeded, want an error containing %q", tt.wantErr)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			if tt.check != nil {
				tt.check(t, got, warnings)
			}
		})
	}
}

func wantMergeWarning(t *testing.T, warnings []string, want string) {
	t.Helper()
	for _, w := range warnings {
		if strings.Contains(w, want) {
			return
		}
	}
	t.Errorf("no warning contains %q; warnings: %q", want, warnings)
}

// Merge is pure: it reads its arguments and shares no memory with them.
func TestMergeDoesNotModifyItsInputs(t *testing.T) {
	base, ext := kepBase(), kepExtension()
	base.Params.Parameters[0].Required = mergeBool(true)
	ext.Operator.Tasks = []Task{{Name: "backup", From: "base/backup", PatchAlias: []string{"p.yaml"}}}
	ext.Operator.Plans = map[string]PlanSpec{"load": {Steps: []Step{{Name: "s", Tasks: []string{"backup"}, Delete: true}}}}
	ext.Params.Parameters = []Param{{Name: "BACKUP", Default: map[string]any{"a": []any{1}}}}
	ext.Templates = map[string]string{"p.yaml": "patch"}
	baseBefore, extBefore := clonePackage(base), clonePackage(ext)

	got, _, err := Merge(base, ext)
	if err != nil {
		t.Fatal(err)
	}
	mergeEqual(t, "base", base, baseBefore)
	mergeEqual(t, "extension", ext, extBefore)

	// Writing through the result must not reach the inputs.
	*got.Params.Parameters[0].Required = false
	got.Params.Parameters[0].Default.(map[string]any)["a"].([]any)[0] = 2
	got.Operator.Tasks[0].Spec.Resources[0] = "changed"
	got.Operator.Plans["deploy"].Phases[0].Steps[0].Tasks[0] = "changed"
	mergeEqual(t, "base after writes", base, baseBefore)
	mergeEqual(t, "extension after writes", ext, extBefore)
}

func TestMergeChain(t *testing.T) {
	// grandbase ← base ← ext. base replaces x.yaml and keeps the
	// grandbase's as base/x.yaml in task orig; ext replaces x.yaml again.
	grand := &Package{
		Operator: Operator{Name: "core", OperatorVersion: "1.0.0", KubernetesVersion: "1.28.0",
			Tasks: []Task{kepApply("app", "x.yaml")},
			Plans: map[string]PlanSpec{"deploy": kepPlan("deploy", "app")}},
		Params:    Params{Parameters: []Param{{Name: "A", Default: "1", Description: "from core"}}},
		Templates: map[string]string{"x.yaml": "core x"},
	}
	mid := &Package{
		Operator: Operator{Name: "mid", OperatorVersion: "2.0.0", Extends: &Extends{Operator: "core", Version: "^1"},
			Tasks: []Task{kepApply("orig", "base/x.yaml")},
			Plans: map[string]PlanSpec{"orig": kepPlan("orig", "orig")}},
		Params:    Params{Parameters: []Param{{Name: "A", Default: "2"}}},
		Templates: map[string]string{"x.yaml": "mid x"},
	}
	leaf := &Package{
		Operator: Operator{Name: "leaf", OperatorVersion: "3.0.0", Extends: &Extends{Operator: "mid", Version: "~2.0"},
			Tasks: []Task{{Name: "mid-app", From: "base/app"}}},
		Params:    Params{Parameters: []Param{{Name: "B", Default: "3"}}},
		Templates: map[string]string{"x.yaml": "leaf x"},
	}
	got, _, err := MergeChain([]*Package{grand, mid, leaf})
	if err != nil {
		t.Fatal(err)
	}
	// app is inherited twice: x.yaml is the leaf's.
	mergeEqual(t, "app", mergedTask(t, got, "app").Spec.Resources, []string{"x.yaml"})
	// orig asked mid's base for x.yaml: the grandbase's, now two levels up.
	mergeEqual(t, "orig", mergedTask(t, got, "orig").Spec.Resources, []string{"base/base/x.yaml"})
	// from: base/app is app as mid has it: x.yaml of mid.
	mergeEqual(t, "mid-app", mergedTask(t, got, "mid-app").Spec.Resources, []string{"base/x.yaml"})
	mergeEqual(t, "x.yaml", got.Templates["x.yaml"], "leaf x")
	mergeEqual(t, "base/x.yaml", got.Templates["base/x.yaml"], "mid x")
	mergeEqual(t, "base/base/x.yaml", got.Templates["base/base/x.yaml"], "core x")
	mergeEqual(t, "params", got.Params.Parameters, []Param{{Name: "A", Default: "2", Description: "from core"}, {Name: "B", Default: "3"}})
	mergeEqual(t, "kubernetesVersion", got.Operator.KubernetesVersion, "1.28.0")
	mergeEqual(t, "plans", sortedNames(got.Operator.Plans), []string{"deploy", "orig"})

	for _, tt := range []struct {
		name    string
		chain   []*Package
		wantErr string
	}{
		// The root must extend nothing.
		{"chain starting at an extension", []*Package{mid, leaf}, `the chain starts at mid 2.0.0, which extends "core"`},
		// Each link must extend the one before.
		{"chain out of order", []*Package{grand, leaf}, `leaf 3.0.0 extends "mid", not "core"`},
		// An empty chain has nothing to return.
		{"empty chain", nil, "empty chain"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := MergeChain(tt.chain)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("MergeChain error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestMergeMatchesBase(t *testing.T) {
	kudoMySQL := &Package{Operator: Operator{OperatorVersion: "0.3.0", AppVersion: "5.7"}}
	for _, tt := range []struct {
		versionRange string
		want         bool
	}{
		{"", true},                 // no range: any version
		{"5.7", true},              // the KEP's example: the appVersion
		{"0.3.0", true},            // the operatorVersion exactly
		{">=0.1.0 <1.0.0", true},   // a range over operatorVersion
		{"~5.7", true},             // a range over appVersion
		{">=1.0.0 <5.0.0", false},  // neither
		{">=1.0.0", true},          // meant for operatorVersion, yet appVersion 5.7 matches: bound ranges
		{"not a range", false},     // unparsable: matches nothing
		{"0.3.0 || 9.9.9", true},   // alternatives
		{">=0.4.0, <5.7.0", false}, // both bounds exclude both versions
	} {
		if got := MatchesBase(kudoMySQL, tt.versionRange); got != tt.want {
			t.Errorf("MatchesBase(operatorVersion 0.3.0, appVersion 5.7, %q) = %v, want %v", tt.versionRange, got, tt.want)
		}
	}
}

func TestMergeNormalizeOperator(t *testing.T) {
	tests := []struct {
		name             string
		op               Operator
		want             Operator
		wantMergeWarning string
		wantErr          string
	}{
		{
			// Every KEP spelling of the patch list ends in Patches.
			name: "patch spellings",
			op: Operator{Tasks: []Task{
				{Name: "a", PatchAlias: []string{"a.yaml"}},
				{Name: "b", PathAlias: []string{"b.yaml"}},
				{Name: "c", Spec: TaskSpec{Patches: []string{"c.yaml"}}},
				{Name: "d", Spec: TaskSpec{PatchAlias: []string{"d.yaml"}, From: "base/d"}},
			}},
			want: Operator{Tasks: []Task{
				{Name: "a", Patches: []string{"a.yaml"}},
				{Name: "b", Patches: []string{"b.yaml"}},
				{Name: "c", Patches: []string{"c.yaml"}},
				{Name: "d", Patches: []string{"d.yaml"}, From: "base/d"},
			}},
			wantMergeWarning: "task b: `path` is read as `patches`",
		},
		{
			// Two lists would leave the order of patches to guesswork.
			name:    "two patch spellings on one task",
			op:      Operator{Tasks: []Task{{Name: "a", Patches: []string{"x"}, PatchAlias: []string{"y"}}}},
			wantErr: "task a: patches are listed under both patches and patch",
		},
		{
			// from and spec.from must agree.
			name:    "from and spec.from differ",
			op:      Operator{Tasks: []Task{{Name: "a", From: "base/a", Spec: TaskSpec{From: "base/b"}}}},
			wantErr: `task a: from is both "base/a" and spec.from "base/b"`,
		},
		{
			// extends: {kudo: {...}} and `name` read as the flat form.
			name: "extends spellings",
			op:   Operator{Extends: &Extends{Name: "mysql", Kudo: &Extends{Version: "5.7"}}},
			want: Operator{Extends: &Extends{Operator: "mysql", Version: "5.7"}},
		},
		{
			name:    "extends names two bases",
			op:      Operator{Extends: &Extends{Operator: "mysql", Kudo: &Extends{Operator: "postgres"}}},
			wantErr: `extends: the base is named both as "mysql" and "postgres"; keep one`,
		},
		{
			// strategy: parallel on a plan of steps is the steps'.
			name: "parallel plan of steps",
			op:   Operator{Plans: map[string]PlanSpec{"p": {Strategy: "parallel", Steps: []Step{{Name: "s"}}}}},
			want: Operator{Plans: map[string]PlanSpec{"p": {Strategy: "serial", Phases: []Phase{{Name: "p", Strategy: "parallel", Steps: []Step{{Name: "s"}}}}}}},
		},
		{
			name:    "plan with phases and steps",
			op:      Operator{Plans: map[string]PlanSpec{"p": {Phases: []Phase{{Name: "x"}}, Steps: []Step{{Name: "s"}}}}},
			wantErr: "plan p: has both phases and steps",
		},
		{
			// An existing "<task>-cleanup" Delete task is used as is.
			name: "delete step reuses a cleanup task",
			op: Operator{
				Tasks: []Task{kepApply("t", "t.yaml"), {Name: "t-cleanup", Kind: KindDelete, Spec: TaskSpec{Resources: []string{"other.yaml"}}}},
				Plans: map[string]PlanSpec{"p": {Phases: []Phase{{Name: "x", Steps: []Step{{Name: "s", Tasks: []string{"t"}, Delete: true}}}}}},
			},
			want: Operator{
				Tasks: []Task{kepApply("t", "t.yaml"), {Name: "t-cleanup", Kind: KindDelete, Spec: TaskSpec{Resources: []string{"other.yaml"}}}},
				Plans: map[string]PlanSpec{"p": {Phases: []Phase{{Name: "x", Steps: []Step{{Name: "s", Tasks: []string{"t-cleanup"}}}}}}},
			},
			wantMergeWarning: "plan p, step s: delete: true is read as Delete tasks t-cleanup",
		},
		{
			// ...unless it is not a Delete task.
			name: "delete step with an Apply task of the cleanup name",
			op: Operator{
				Tasks: []Task{kepApply("t", "t.yaml"), kepApply("t-cleanup", "t.yaml")},
				Plans: map[string]PlanSpec{"p": {Phases: []Phase{{Name: "x", Steps: []Step{{Name: "s", Tasks: []string{"t"}, Delete: true}}}}}},
			},
			wantErr: `plan p, step s: delete: true runs task t as a Delete task "t-cleanup", but that task is of kind "Apply"`,
		},
		{
			// Outside an extension, a delete step's task must exist.
			name:    "delete step names a missing task",
			op:      Operator{Plans: map[string]PlanSpec{"p": {Steps: []Step{{Name: "s", Tasks: []string{"t"}, Delete: true}}}}},
			wantErr: "plan p, step s: delete: true names task t, which the package does not define",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := tt.op
			warnings, err := NormalizeOperator(&op)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mergeEqual(t, "operator", op, tt.want)
			if tt.wantMergeWarning != "" {
				wantMergeWarning(t, warnings, tt.wantMergeWarning)
			}
			// Idempotent: a second pass changes nothing and says nothing.
			again := clonePackage(&Package{Operator: op}).Operator
			warnings, err = NormalizeOperator(&again)
			if err != nil || len(warnings) > 0 || !reflect.DeepEqual(again, op) {
				t.Errorf("second NormalizeOperator = %+v, %q, %v; want no change", again, warnings, err)
			}
		})
	}
}

// TestMergeGolden merges every testdata/merge/<case>/{base,ext} and
// compares the merged package, printed by MarshalYAMLDocs, and the
// warnings with testdata/merge/<case>/merged.golden. Regenerate with
// go test ./internal/engine/pkg -run Merge -update.
func TestMergeGolden(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "merge", "*", "ext"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no testdata/merge/<case>/ext folders")
	}
	for _, extDir := range cases {
		dir := filepath.Dir(extDir)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			merged, warnings, err := Merge(loadMergePackage(t, filepath.Join(dir, "base")), loadMergePackage(t, extDir))
			if err != nil {
				t.Fatal(err)
			}
			checkGoldenFile(t, filepath.Join("merge", filepath.Base(dir), "merged.golden"), printMerged(t, merged, warnings))
		})
	}
}

// TestMergeSamples merges the built-in catalog's MySQL packages (KEP-0012's
// example, written for Annex) on both base versions, and renders the
// merged deploy and load plans.
func TestMergeSamples(t *testing.T) {
	const builtin = "../../catalog/builtin/packages"
	ext := loadMergePackage(t, filepath.Join(builtin, "mysql-analytics-0.1.0"))
	for _, baseVersion := range []string{"0.1.0", "0.2.0"} {
		t.Run("base "+baseVersion, func(t *testing.T) {
			base := loadMergePackage(t, filepath.Join(builtin, "mysql-base-"+baseVersion))
			merged, warnings, err := Merge(base, ext)
			if err != nil {
				t.Fatal(err)
			}
			checkGoldenFile(t, "merge/samples/merged-base-"+baseVersion+".golden", printMerged(t, merged, warnings))

			values, err := Resolve(merged, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, planName := range []string{PlanDeploy, "load"} {
				rendered, warnings, err := RenderPlan(merged, planName, Input{Instance: "analytics", Namespace: "db", Params: values, KubeVersion: "1.31.0"})
				if err != nil {
					t.Fatal(err)
				}
				if len(warnings) > 0 {
					t.Errorf("RenderPlan %s warnings: %q", planName, warnings)
				}
				checkGoldenFile(t, "merge/samples/"+planName+"-base-"+baseVersion+".golden", printRenderedPlan(t, rendered))
			}
		})
	}
}

// The built-in samples do what the README says of them.
func TestMergeSampleContract(t *testing.T) {
	const builtin = "../../catalog/builtin/packages"
	base := loadMergePackage(t, filepath.Join(builtin, "mysql-base-0.1.0"))
	ext := loadMergePackage(t, filepath.Join(builtin, "mysql-analytics-0.1.0"))
	if !MatchesBase(base, ext.Operator.Extends.Version) {
		t.Fatalf("mysql-analytics's extends.version %q does not match mysql %s", ext.Operator.Extends.Version, base.Operator.OperatorVersion)
	}
	merged, _, err := Merge(base, ext)
	if err != nil {
		t.Fatal(err)
	}
	size := mergedParam(t, merged, "BACKUP_STORAGE_SIZE")
	mergeEqual(t, "BACKUP_STORAGE_SIZE default", size.Default, "5Gi")
	mergeEqual(t, "BACKUP_STORAGE_SIZE trigger", size.Trigger, "resize")
	mergeEqual(t, "BACKUP_STORAGE_SIZE description", size.Description, mergedParam(t, base, "BACKUP_STORAGE_SIZE").Description)
	mergeEqual(t, "DATA_LOCATION trigger", mergedParam(t, merged, "DATA_LOCATION").Trigger, "load")
	mergeEqual(t, "deploy patches", mergedTask(t, merged, "deploy").Patches, []string{"exporter-patch.yaml"})

	values, err := Resolve(merged, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	deploy, _, err := RenderPlan(merged, PlanDeploy, Input{Instance: "analytics", Namespace: "db", Params: values})
	if err != nil {
		t.Fatal(err)
	}
	// The exporter patch added a container and kept the base's.
	for _, obj := range deploy.Objects(plan.TaskApply) {
		if obj.GetKind() != "StatefulSet" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		var names []string
		for _, c := range containers {
			names = append(names, c.(map[string]any)["name"].(string))
		}
		slices.Sort(names)
		mergeEqual(t, "StatefulSet containers", names, []string{"exporter", "mysql"})
		return
	}
	t.Error("the deploy plan applies no StatefulSet")
}

// Every plan of the built-in MySQL packages, alone and merged, renders
// without a warning, and Lint finds nothing wrong in their folders.
func TestMergeSamplesRenderEveryPlan(t *testing.T) {
	const builtin = "../../catalog/builtin/packages"
	ext := loadMergePackage(t, filepath.Join(builtin, "mysql-analytics-0.1.0"))
	packages := map[string]*Package{}
	for _, dir := range []string{"mysql-base-0.1.0", "mysql-base-0.2.0", "mysql-analytics-0.1.0"} {
		for _, problem := range Lint(os.DirFS(filepath.Join(builtin, dir))) {
			if problem.Severity == SeverityError || dir != "mysql-analytics-0.1.0" {
				t.Errorf("%s: %s", dir, problem)
			}
		}
		if dir == "mysql-analytics-0.1.0" {
			continue
		}
		base := loadMergePackage(t, filepath.Join(builtin, dir))
		merged, _, err := Merge(base, ext)
		if err != nil {
			t.Fatal(err)
		}
		packages[dir], packages["mysql-analytics on "+dir] = base, merged
	}
	for _, name := range sortedNames(packages) {
		p := packages[name]
		values, err := Resolve(p, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, planName := range sortedNames(p.Operator.Plans) {
			_, warnings, err := RenderPlan(p, planName, Input{Instance: "db", Namespace: "ns", Params: values, KubeVersion: "1.30.0"})
			if err != nil || len(warnings) > 0 {
				t.Errorf("%s: plan %s: %v %q", name, planName, err, warnings)
			}
		}
	}
}

// loadMergePackage reads a package folder with the package reader.
func loadMergePackage(t testing.TB, dir string) *Package {
	t.Helper()
	p, err := LoadDir(os.DirFS(dir))
	if err != nil {
		t.Fatalf("load %s: %v", dir, err)
	}
	return p
}

// printMerged is MarshalYAMLDocs plus the warnings, as comments.
func printMerged(t *testing.T, p *Package, warnings []string) []byte {
	t.Helper()
	out, err := p.MarshalYAMLDocs()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.Write(out)
	b.WriteString("# warnings:\n")
	for _, w := range warnings {
		fmt.Fprintf(&b, "# - %s\n", w)
	}
	return b.Bytes()
}

// printRenderedPlan prints a rendered plan as YAML: its phases, steps and
// tasks, each task's objects in full.
func printRenderedPlan(t *testing.T, p plan.Plan) []byte {
	t.Helper()
	type task struct {
		Name    string           `json:"name"`
		Kind    plan.TaskKind    `json:"kind"`
		Objects []map[string]any `json:"objects,omitempty"`
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
	out := struct {
		Name     string        `json:"plan"`
		Strategy plan.Strategy `json:"strategy"`
		Phases   []phase       `json:"phases"`
	}{Name: p.Name, Strategy: p.Strategy}
	for _, ph := range p.Phases {
		php := phase{Name: ph.Name, Strategy: ph.Strategy}
		for _, st := range ph.Steps {
			s := step{Name: st.Name}
			for _, tk := range st.Tasks {
				pt := task{Name: tk.Name, Kind: tk.Kind}
				for _, obj := range tk.Objects {
					pt.Objects = append(pt.Objects, obj.Object)
				}
				s.Tasks = append(s.Tasks, pt)
			}
			php.Steps = append(php.Steps, s)
		}
		out.Phases = append(out.Phases, php)
	}
	data, err := blockYAML(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// BenchmarkMergeRender merges a 3-level chain (a root of 50 templates, a
// middle package replacing 10 of them and patching a copied task, a leaf
// replacing 10 more) and renders the merged deploy plan.
func BenchmarkMergeRender(b *testing.B) {
	const n = 50
	configMap := func(i int, from string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm-%02d\ndata:\n  from: %s\n  greeting: {{ .Params.GREETING | quote }}\n", i, from)
	}
	root := &Package{
		Operator:  Operator{Name: "root", OperatorVersion: "1.0.0", KubernetesVersion: "1.30.0", Plans: map[string]PlanSpec{}},
		Params:    Params{Parameters: []Param{{Name: "GREETING", Default: "hello", Description: "what every ConfigMap says"}}},
		Templates: map[string]string{},
	}
	deploy := Phase{Name: "deploy", Strategy: "serial"}
	for i := range n {
		name := fmt.Sprintf("t-%02d", i)
		root.Templates[fmt.Sprintf("cm-%02d.yaml", i)] = configMap(i, "root")
		root.Operator.Tasks = append(root.Operator.Tasks, kepApply(name, fmt.Sprintf("cm-%02d.yaml", i)))
		if i%10 == 0 {
			deploy.Steps = append(deploy.Steps, Step{Name: fmt.Sprintf("step-%d", i/10)})
		}
		last := &deploy.Steps[len(deploy.Steps)-1]
		last.Tasks = append(last.Tasks, name)
	}
	root.Operator.Plans[PlanDeploy] = PlanSpec{Strategy: "serial", Phases: []Phase{deploy}}

	mid := &Package{
		Operator: Operator{Name: "mid", OperatorVersion: "1.0.0", Extends: &Extends{Operator: "root", Version: "^1.0.0"},
			Tasks: []Task{{Name: "t-10", From: "base/t-10", Patches: []string{"patch.yaml"}}}},
		Params:    Params{Parameters: []Param{{Name: "GREETING", Default: "hi"}}},
		Templates: map[string]string{"patch.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-cm-10\ndata:\n  patched: \"true\"\n"},
	}
	leaf := &Package{
		Operator:  Operator{Name: "leaf", OperatorVersion: "1.0.0", Extends: &Extends{Operator: "mid", Version: "^1.0.0"}},
		Templates: map[string]string{},
	}
	for i := range 10 {
		mid.Templates[fmt.Sprintf("cm-%02d.yaml", i)] = configMap(i, "mid")
		leaf.Templates[fmt.Sprintf("cm-%02d.yaml", 20+i)] = configMap(20+i, "leaf")
	}
	chain := []*Package{root, mid, leaf}

	b.ReportAllocs()
	for b.Loop() {
		merged, _, err := MergeChain(chain)
		if err != nil {
			b.Fatal(err)
		}
		values, err := Resolve(merged, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		p, _, err := RenderPlan(merged, PlanDeploy, Input{Instance: "bench", Namespace: "default", Params: values})
		if err != nil {
			b.Fatal(err)
		}
		if got := len(p.Objects(plan.TaskApply)); got != n {
			b.Fatalf("rendered %d objects, want %d", got, n)
		}
	}
}
