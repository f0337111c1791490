package pkg

import (
	"os"
	"strings"
	"testing"
)

func TestLintTestPackages(t *testing.T) {
	tests := []struct {
		dir  string
		want []string
	}{
		// The full package is clean.
		{"testdata/packages/full", nil},
		// A KUDO 0.7 package loads, with a warning per old form.
		{"testdata/packages/legacy", []string{
			`operator.yaml:4: warning: key "version" is the name KUDO used before 0.10; rename it to operatorVersion`,
			"params.yaml:1: warning: parameters are a map, the form of KUDO before 0.8; write `apiVersion: kudo.dev/v1beta1` and a `parameters:` list of `- name: ...` entries",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			checkProblems(t, Lint(os.DirFS(tt.dir)), tt.want)
		})
	}
}

func checkProblems(t *testing.T, problems []Problem, want []string) {
	t.Helper()
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLint(t *testing.T) {
	// operator builds operator.yaml from minimal's with replacements.
	operator := func(oldNew ...string) string {
		return strings.NewReplacer(oldNew...).Replace(string(minimal()["operator.yaml"].Data))
	}
	const plans = "plans:\n  deploy:\n    phases:\n      - name: main\n        steps:\n          - name: app\n            tasks: [app]\n"
	tests := []struct {
		name    string
		changes map[string]string
		want    []string
	}{
		// The minimal package is clean.
		{"clean", nil, nil},
		{"no files", map[string]string{"operator.yaml": "-", "params.yaml": "-"}, []string{
			"operator.yaml: error: is missing; a package has operator.yaml at its root",
			"params.yaml: error: is missing; a package has params.yaml at its root (it may be empty)",
		}},
		// A file that does not load is one error, with its line.
		{"bad yaml", map[string]string{"params.yaml": "parameters:\n  - name: A\n    default: a: b\n"}, []string{
			"params.yaml:3: error: is not valid YAML: mapping values are not allowed in this context; fix the syntax",
		}},
		{"names and versions", map[string]string{"operator.yaml": operator("name: tiny\n", "", "0.1.0", "v1") + "kubernetesVersion: latest\n"}, []string{
			"operator.yaml:1: error: name is missing; set name to the package's name",
			`operator.yaml:1: error: operatorVersion "v1" is not a semantic version; write it as MAJOR.MINOR.PATCH, such as 0.1.0`,
			`operator.yaml:14: error: kubernetesVersion "latest" is not a semantic version; write the oldest supported version, such as 1.16.0`,
		}},
		{"unknown keys", map[string]string{
			"operator.yaml": operator("    kind: Apply\n", "    kind: Apply\n    retries: 3\n"),
			"params.yaml":   "parameters:\n  - name: A\n    default: x\n    hidden: true\n",
		}, []string{
			`operator.yaml:6: warning: unknown key "tasks[0].retries"; KUDO and Annex ignore it: remove it or fix its spelling`,
			`params.yaml:4: warning: unknown key "parameters[0].hidden"; KUDO and Annex ignore it: remove it or fix its spelling`,
		}},
		// encoding/json under KUDO's reader matched keys in any case.
		{"key case", map[string]string{"operator.yaml": operator("name: tiny", "Name: tiny", "    kind: Apply", "    Kind: Apply")}, []string{
			`operator.yaml:1: warning: key "Name" is read as "name"; write name`,
			`operator.yaml:5: warning: key "tasks[0].Kind" is read as "kind"; write kind`,
		}},
		{"task problems", map[string]string{"operator.yaml": `name: tiny
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cm.yaml, missing.yaml, base/x.yaml]
  - name: app
    kind: Helm
  - name: empty
    kind: Delete
  - name: pipe
    kind: Pipe
    spec:
      pipe:
        - {file: /a, envFile: /b, kind: Volume, key: "a.b"}
  - name: dep
    kind: KudoOperator
  - name: toggle
    kind: Toggle
    spec:
      parameter: NOPE
      resources: [cm.yaml]
  - name: copied
    from: base/app
    patches: [p.yaml]
` + plans}, []string{
			`operator.yaml:7: error: task "app": resource "base/x.yaml" refers to the base package, but this package does not extend one; set extends or use templates/x.yaml`,
			`operator.yaml:7: error: task "app": resource "missing.yaml" is not in templates/; add templates/missing.yaml or fix the name`,
			`operator.yaml:8: error: task "app" is defined twice; rename or remove one`,
			`operator.yaml:9: error: task "app" has unknown kind "Helm"; use one of Apply, Delete, Toggle, Pipe, KudoOperator, Dummy`,
			`operator.yaml:10: error: task "empty" has no resources; list its templates under spec.resources`,
			`operator.yaml:12: error: task "pipe" has no spec.pod; name the template of the pod that produces the files`,
			`operator.yaml:16: error: task "pipe": pipe "a.b" needs exactly one of file and envFile`,
			`operator.yaml:16: error: task "pipe": pipe key "a.b" must match ^[a-zA-Z0-9_-]+$; rename it`,
			`operator.yaml:16: error: task "pipe": pipe kind "Volume" must be Secret or ConfigMap`,
			`operator.yaml:17: error: task "dep" has no spec.package; name the package it depends on`,
			`operator.yaml:22: error: task "toggle" toggles on parameter "NOPE", which params.yaml does not declare; declare it or fix the name`,
			`operator.yaml:25: error: task "copied" copies base/app but the package does not extend a base; set extends or remove from`,
			`operator.yaml:26: error: task "copied": patch "p.yaml" is not in templates/; add templates/p.yaml or fix the name`,
		}},
		{"plan problems", map[string]string{"operator.yaml": operator(
			"  deploy:\n", "  install:\n    strategy: sequential\n",
			"tasks: [app]", "tasks: [app, ghost]")}, []string{
			`operator.yaml:8: error: there is no deploy plan; every package needs plans.deploy, which installs it`,
			`operator.yaml:10: warning: strategy "sequential" is neither serial nor parallel and behaves as parallel; write one of them`,
			`operator.yaml:15: error: plan install, step "app" names task "ghost", which tasks does not define; add the task or fix the name`,
		}},
		// An extension inherits from its base what Lint cannot see:
		// warnings, and base/ references are fine.
		{"extension", map[string]string{
			"operator.yaml": "name: ext\noperatorVersion: 0.1.0\nextends: {operator: tiny, version: \">=0.1\"}\ntasks:\n  - name: app\n    from: base/app\n    patches: [base/p.yaml, own.yaml]\n  - name: more\n    kind: Apply\n    spec: {resources: [base/cm.yaml, cm2.yaml]}\nplans:\n  backup:\n    phases:\n      - name: b\n        steps:\n          - name: b\n            tasks: [inherited]\n",
			"params.yaml":   "parameters:\n  - name: A\n    default: x\n    trigger: update\n",
		}, []string{
			`operator.yaml:7: warning: task "app": patch "own.yaml" is not in templates/; add templates/own.yaml or fix the name (fine if the base package defines it)`,
			`operator.yaml:10: warning: task "more": resource "cm2.yaml" is not in templates/; add templates/cm2.yaml or fix the name (fine if the base package defines it)`,
			`operator.yaml:17: warning: plan backup, step "b" names task "inherited", which tasks does not define; add the task or fix the name (fine if the base package defines it)`,
			`params.yaml:4: warning: parameter "A" triggers plan "update", which operator.yaml does not define; add the plan or fix the trigger (fine if the base package defines it)`,
		}},
		{"parameters", map[string]string{
			"operator.yaml": operator(),
			"params.yaml": `parameters:
  - name: REPLICAS
    type: integer
    default: three
  - name: replicas
    default: "1"
  - name: A;B
    default: x
  - name: LOCKED
    immutable: true
    required: false
  - name: SIZE
    default: 30Gi
    enum: [10Gi, 20Gi]
  - name: PORT
    type: integer
    enum: [80, http]
  - name: KIND
    type: int
  - name: RUN
    default: x
    trigger: backup
  - name: OK_BOOL
    type: boolean
    default: yes
`}, []string{
			`params.yaml:4: error: parameter "REPLICAS": default must be an integer (got "three"); fix the default or the type`,
			`params.yaml:5: error: parameter "replicas" is declared twice (as "REPLICAS" before; names are case-insensitive); rename or remove one`,
			`params.yaml:7: error: parameter "A;B": names must not contain ';' or ','; rename it`,
			`params.yaml:9: error: parameter "LOCKED" is immutable but has no default and is not required, so it could never be set; add a default or remove required: false`,
			`params.yaml:13: error: parameter "SIZE": default "30Gi" is not one of the enum "10Gi", "20Gi"; fix the default or the enum`,
			`params.yaml:17: error: parameter "PORT": enum value "http" must be an integer (got "http"); fix it`,
			`params.yaml:19: error: parameter "KIND" has unknown type "int"; use string, integer, number, boolean, array or map`,
			`params.yaml:22: error: parameter "RUN" triggers plan "backup", which operator.yaml does not define; add the plan or fix the trigger`,
		}},
		{"templates", map[string]string{
			"templates/bad.yaml":   "a: 1\nb: {{ .Name \n",
			"templates/fn.yaml":    "a: {{ env \"HOME\" }}\n",
			"templates/ns.yaml":    "apiVersion: v1\n---\nkind: Namespace\nmetadata:\n  name: x\n",
			"templates/nested.yml": "kind: X\n",
		}, []string{
			"templates/bad.yaml:3: error: is not a valid Go template: bad.yaml:3: unclosed action started at bad.yaml:2; fix the template",
			`templates/fn.yaml:1: error: is not a valid Go template: fn.yaml:1: function "env" not defined; fix the template`,
			"templates/nested.yml: warning: is not read: templates end in .yaml; rename it or move it out of templates/",
			"templates/ns.yaml:3: error: holds a Namespace; only the template named by namespaceManifest in operator.yaml may create one: move it there",
		}},
		// The namespaceManifest may hold the Namespace, and must exist.
		{"namespace manifest", map[string]string{
			"operator.yaml":     operator() + "namespaceManifest: ns.yaml\n",
			"templates/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n",
		}, nil},
		{"missing namespace manifest", map[string]string{"operator.yaml": operator() + "namespaceManifest: ns.yaml\n"}, []string{
			`operator.yaml:15: error: namespaceManifest "ns.yaml" is not in templates/; add templates/ns.yaml or fix the name`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkProblems(t, Lint(with(minimal(), tt.changes)), tt.want)
		})
	}
}

// Lint reads archives through ArchiveFS.
func TestLintArchive(t *testing.T) {
	fsys, err := ArchiveFS(tgz(t, entry{name: "pkg/operator.yaml", body: "name: x\noperatorVersion: 1.0.0\n"}, entry{name: "pkg/params.yaml"}))
	if err != nil {
		t.Fatal(err)
	}
	checkProblems(t, Lint(fsys), []string{
		"operator.yaml:1: error: there is no deploy plan; every package needs plans.deploy, which installs it",
	})
}
