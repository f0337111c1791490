package pkg

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/semver/v3"
	"github.com/Masterminds/sprig/v3"
	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/internal/plan"
)

// Task kinds of operator.yaml.
const (
	KindApply        = "Apply"
	KindDelete       = "Delete"
	KindToggle       = "Toggle"
	KindPipe         = "Pipe"
	KindKudoOperator = "KudoOperator"
	KindDummy        = "Dummy"
)

// Input is what a plan is rendered for.
type Input struct {
	// Instance is the installation's name (.Name in templates).
	Instance string
	// Namespace is the installation's namespace (.Namespace).
	Namespace string
	// Params are the effective parameters (Resolve), as .Params.
	Params map[string]any
	// KubeVersion is the target cluster's version. Templates do not see
	// it (KUDO has no .Capabilities); RenderPlan warns when it is below
	// the package's kubernetesVersion.
	KubeVersion string
}

// RenderError reports that a plan could not be rendered: a missing plan or
// task, a template that fails or does not produce objects, a bad Toggle
// parameter, Pipe or patch. It is terminal for this package and these
// parameters.
type RenderError struct {
	Plan string
	// Task is the task at fault, empty when the plan is.
	Task string
	// Template is the template (or patch) path at fault, when one is.
	Template string
	Err      error
}

func (e *RenderError) Error() string {
	var b strings.Builder
	b.WriteString("render plan " + strconv.Quote(e.Plan))
	if e.Task != "" {
		b.WriteString(", task " + strconv.Quote(e.Task))
	}
	msg := e.Err.Error()
	if e.Template != "" && !strings.HasPrefix(msg, e.Template) {
		b.WriteString(", template " + e.Template)
	}
	return b.String() + ": " + msg
}

func (e *RenderError) Unwrap() error { return e.Err }

// Permanent marks the error as final: the same package and parameters
// fail again.
func (e *RenderError) Permanent() bool { return true }

// templateFuncs are KUDO's: Sprig's text functions minus those that read
// the controller's environment or files, plus toYaml. getHostByName goes
// too (Sprig 3 added it; it does DNS lookups, and rendering is pure).
var templateFuncs = func() template.FuncMap {
	f := sprig.TxtFuncMap()
	for _, name := range []string{"env", "expandenv", "base", "dir", "clean", "ext", "isAbs", "getHostByName"} {
		delete(f, name)
	}
	f["toYaml"] = toYAML
	return f
}()

// toYAML is KUDO's toYaml: YAML 1.1 text ending in a newline.
func toYAML(v any) (string, error) {
	out, err := yamlv2.Marshal(v)
	return string(out), err
}

// RenderPlan renders plan planName of p into a plan.Plan: every task's
// templates are executed (Go text/template, missingkey=error, the
// functions of templateFuncs) with .OperatorName .Name .Namespace
// .AppVersion .OperatorVersion .PlanName .PhaseName .StepName .Params and
// .Pipes, parsed into objects, and patched by the task's Patches. Objects
// keep the namespace their template wrote (the applier places them) and
// the order of the task's resources, then of documents.
//
// Task kinds: Apply and Delete become plan.TaskApply and TaskDelete;
// Toggle becomes Apply when its parameter is true, Delete when false;
// Pipe becomes plan.TaskPipe (its pod must be one v1 Pod); KudoOperator
// becomes plan.TaskDependency on spec.package at exactly its
// operatorVersion (or appVersion); Dummy becomes plan.TaskDummy. A
// strategy "serial" is plan.Serial, anything else plan.Parallel, as in
// KUDO. A plan without phases renders to an empty plan.
//
// .Pipes.<key> is the name of the Secret or ConfigMap a Pipe task of this
// plan fills: <instance>.<plan>.<phase>.<step>.<task>.<key> made a DNS
// subdomain (see PipeName). Keys this plan has no Pipe for name the
// objects of deploy's Pipe tasks, then of other plans' (KUDO showed only
// the running plan's, so templates shared by deploy and update failed).
//
// Warnings say what rendered but deserves attention: a patch matching no
// resource, KudoOperator fields Annex does not use, a cluster older than
// kubernetesVersion. Errors are *RenderError.
func RenderPlan(p *Package, planName string, in Input) (plan.Plan, []string, error) {
	src, ok := p.Operator.Plans[planName]
	if !ok {
		return plan.Plan{}, nil, &RenderError{Plan: planName, Err: fmt.Errorf(
			"package %s has no plan %q; its plans are %s", p.Operator.Name, planName, strings.Join(slices.Sorted(maps.Keys(p.Operator.Plans)), ", "))}
	}
	if len(src.Steps) > 0 && len(src.Phases) == 0 {
		return plan.Plan{}, nil, &RenderError{Plan: planName, Err: errors.New("the plan is written as steps without phases; NormalizeOperator (LoadDir and Merge call it) turns it into a phase")}
	}
	r := &planRenderer{p: p, plan: planName, parsed: map[string]*template.Template{}, tasks: map[string]Task{}}
	for _, t := range p.Operator.Tasks {
		r.tasks[t.Name] = t
	}
	r.warnKubeVersion(in.KubeVersion)
	pipes, err := r.pipes(src, in.Instance)
	if err != nil {
		return plan.Plan{}, nil, err
	}
	params := map[string]any{}
	maps.Copy(params, in.Params) // templates may `set` on .Params; keep the caller's map
	data := map[string]any{
		"OperatorName":    p.Operator.Name,
		"Name":            in.Instance,
		"Namespace":       in.Namespace,
		"AppVersion":      p.Operator.AppVersion,
		"OperatorVersion": p.Operator.OperatorVersion,
		"PlanName":        planName,
		"Params":          params,
		"Pipes":           pipes,
	}

	out := plan.Plan{Name: planName, Strategy: strategy(src.Strategy)}
	for _, ph := range src.Phases {
		phase := plan.Phase{Name: ph.Name, Strategy: strategy(ph.Strategy)}
		for _, st := range ph.Steps {
			stepData := maps.Clone(data)
			stepData["PhaseName"], stepData["StepName"] = ph.Name, st.Name
			step := plan.Step{Name: st.Name}
			for _, name := range st.Tasks {
				task, err := r.task(ph.Name, st.Name, name, stepData)
				if err != nil {
					return plan.Plan{}, nil, err
				}
				step.Tasks = append(step.Tasks, task)
			}
			phase.Steps = append(phase.Steps, step)
		}
		out.Phases = append(out.Phases, phase)
	}
	return out, r.warnings, nil
}

// planRenderer holds what one RenderPlan call shares between tasks.
type planRenderer struct {
	p        *Package
	plan     string
	tasks    map[string]Task
	parsed   map[string]*template.Template
	warnings []string
}

func strategy(s string) plan.Strategy {
	if s == string(plan.Serial) {
		return plan.Serial
	}
	return plan.Parallel
}

func (r *planRenderer) fail(task, tmpl string, format string, args ...any) error {
	return &RenderError{Plan: r.plan, Task: task, Template: tmpl, Err: fmt.Errorf(format, args...)}
}

func (r *planRenderer) warnKubeVersion(kube string) {
	want := r.p.Operator.KubernetesVersion
	if want == "" || kube == "" {
		return
	}
	wantV, err1 := semver.NewVersion(want)
	kubeV, err2 := semver.NewVersion(kube)
	if err1 == nil && err2 == nil && kubeV.LessThan(wantV) {
		r.warnings = append(r.warnings, fmt.Sprintf("package %s wants Kubernetes %s or later; the cluster runs %s", r.p.Operator.Name, want, kube))
	}
}

// pipes names the object of every pipe key: those of the plan rendered,
// then, for keys it lacks, those of deploy, then of the other plans in
// name order. KUDO showed only the running plan's, so a template shared
// by deploy (which runs the Pipe) and update failed in update; the
// objects deploy filled are still there, so Annex names them.
func (r *planRenderer) pipes(src PlanSpec, instance string) (map[string]string, error) {
	pipes, err := r.planPipes(r.plan, src, instance, true)
	if err != nil {
		return nil, err
	}
	others := []string{PlanDeploy}
	for _, name := range slices.Sorted(maps.Keys(r.p.Operator.Plans)) {
		if name != PlanDeploy {
			others = append(others, name)
		}
	}
	for _, name := range others {
		other, ok := r.p.Operator.Plans[name]
		if !ok || name == r.plan {
			continue
		}
		more, _ := r.planPipes(name, other, instance, false)
		for key, obj := range more {
			if _, ok := pipes[key]; !ok {
				pipes[key] = obj
			}
		}
	}
	return pipes, nil
}

// planPipes names the objects of one plan's pipe keys; strict refuses a
// key used twice.
func (r *planRenderer) planPipes(planName string, src PlanSpec, instance string, strict bool) (map[string]string, error) {
	pipes := map[string]string{}
	for _, ph := range src.Phases {
		for _, st := range ph.Steps {
			for _, name := range st.Tasks {
				t, ok := r.tasks[name]
				if !ok || t.Kind != KindPipe {
					continue
				}
				for _, pf := range t.Spec.Pipe {
					if _, dup := pipes[pf.Key]; dup {
						if strict {
							return nil, r.fail(name, "", "pipe key %q is used twice in the plan; .Pipes.%s would be ambiguous: rename one", pf.Key, pf.Key)
						}
						continue
					}
					pipes[pf.Key] = PipeName(instance, planName, ph.Name, st.Name, name, pf.Key)
				}
			}
		}
	}
	return pipes, nil
}

// task renders one task of a step.
func (r *planRenderer) task(phase, step, name string, data map[string]any) (plan.Task, error) {
	t, ok := r.tasks[name]
	if !ok {
		return plan.Task{}, r.fail(name, "", "phase %q step %q names task %q, which operator.yaml does not define; add it to tasks or fix the step", phase, step, name)
	}
	out := plan.Task{Name: name}
	if len(t.Patches) > 0 && (t.Kind == KindKudoOperator || t.Kind == KindDummy) {
		return out, r.fail(name, "", "patches apply to the objects of Apply, Delete, Toggle and Pipe tasks; a %s task has none: remove them", t.Kind)
	}
	switch t.Kind {
	case KindApply, KindDelete, KindToggle:
		objs, err := r.objects(t, t.Spec.Resources, data)
		if err != nil {
			return out, err
		}
		out.Kind, out.Objects = plan.TaskApply, objs
		if t.Kind == KindDelete {
			out.Kind = plan.TaskDelete
		}
		if t.Kind == KindToggle {
			on, err := r.toggle(t, data)
			if err != nil {
				return out, err
			}
			if !on {
				out.Kind = plan.TaskDelete
			}
		}
	case KindPipe:
		pipe, err := r.pipe(t, data)
		if err != nil {
			return out, err
		}
		out.Kind, out.Pipe = plan.TaskPipe, pipe
	case KindKudoOperator:
		if t.Spec.Package == "" {
			return out, r.fail(name, "", "KudoOperator task has no spec.package; name the package it depends on")
		}
		if t.Spec.InstanceName != "" || t.Spec.ParameterFile != "" {
			r.warnings = append(r.warnings, fmt.Sprintf("task %s: instanceName and parameterFile are ignored: a dependency is its own installation of %s, with its own values", name, t.Spec.Package))
		}
		version := ""
		switch {
		case t.Spec.OperatorVersion != "":
			version = "=" + t.Spec.OperatorVersion
		case t.Spec.AppVersion != "":
			version = "=" + t.Spec.AppVersion
		}
		out.Kind, out.Dependency = plan.TaskDependency, &plan.Dependency{Extension: t.Spec.Package, Version: version}
	case KindDummy:
		out.Kind, out.Dummy = plan.TaskDummy, &plan.Dummy{WantErr: t.Spec.WantErr, Fatal: t.Spec.Fatal, Done: t.Spec.Done}
	case "":
		if t.From != "" {
			return out, r.fail(name, "", "task copies %s but has no kind: merge the package onto its base before rendering", t.From)
		}
		return out, r.fail(name, "", "task has no kind; set kind to Apply, Delete, Toggle, Pipe, KudoOperator or Dummy")
	default:
		return out, r.fail(name, "", "task kind %q is unknown; use Apply, Delete, Toggle, Pipe, KudoOperator or Dummy", t.Kind)
	}
	return out, nil
}

// objects renders templates into objects and applies the task's patches.
func (r *planRenderer) objects(t Task, templates []string, data map[string]any) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, name := range templates {
		text, err := r.execute(t.Name, name, data)
		if err != nil {
			return nil, err
		}
		parsed, err := ParseObjects(text)
		if err != nil {
			return nil, &RenderError{Plan: r.plan, Task: t.Name, Template: name, Err: err}
		}
		objs = append(objs, parsed...)
	}
	return r.patch(t, objs, data)
}

// execute renders one template of the package.
func (r *planRenderer) execute(task, name string, data map[string]any) (string, error) {
	tmpl, ok := r.parsed[name]
	if !ok {
		text, found := r.p.Templates[name]
		if !found {
			return "", r.fail(task, name, "template %q is not in the package; add templates/%s or fix the task", name, name)
		}
		var err error
		tmpl, err = parseTemplate(name, text)
		if err != nil {
			return "", &RenderError{Plan: r.plan, Task: task, Template: name, Err: templateError(err)}
		}
		r.parsed[name] = tmpl
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return "", &RenderError{Plan: r.plan, Task: task, Template: name, Err: templateError(err)}
	}
	return buf.String(), nil
}

// templatePrototype carries the options and functions every template
// gets; cloning it copies the function maps, which is far cheaper than
// Funcs checking every function again for each template.
var templatePrototype = template.New("").Option("missingkey=error").Funcs(templateFuncs)

// parseTemplate parses one template in a namespace of its own, as KUDO
// does: a {{ define }} in one file is not seen by another.
func parseTemplate(name, text string) (*template.Template, error) {
	base, err := templatePrototype.Clone()
	if err != nil {
		return nil, err
	}
	return base.New(name).Parse(text)
}

// templateError drops text/template's "template: " prefix (the message
// starts with name:line:col) and adds the fix for the commonest mistake.
func templateError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "template: ")
	if strings.Contains(msg, "map has no entry for key") {
		msg += "; declare the parameter in params.yaml or fix the template"
	}
	return errors.New(msg)
}

// toggle reads a Toggle task's boolean parameter.
func (r *planRenderer) toggle(t Task, data map[string]any) (bool, error) {
	params, _ := data["Params"].(map[string]any)
	v, ok := params[t.Spec.Parameter]
	if t.Spec.Parameter == "" || !ok {
		return false, r.fail(t.Name, "", "Toggle task needs spec.parameter naming a boolean parameter; %q is not a parameter", t.Spec.Parameter)
	}
	switch v := v.(type) {
	case bool:
		return v, nil
	case string:
		if b, ok := parseBool(strings.TrimSpace(v)); ok {
			return b, nil
		}
	}
	return false, r.fail(t.Name, "", "Toggle parameter %s is %s, not a boolean; set it to true or false", t.Spec.Parameter, describeValue(v))
}

var pipeKey = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

func (r *planRenderer) pipe(t Task, data map[string]any) (*plan.Pipe, error) {
	if t.Spec.Pod == "" {
		return nil, r.fail(t.Name, "", "Pipe task has no spec.pod; name the template of the pod that produces the files")
	}
	objs, err := r.objects(t, []string{t.Spec.Pod}, data)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 || objs[0].GetAPIVersion() != "v1" || objs[0].GetKind() != "Pod" {
		return nil, r.fail(t.Name, t.Spec.Pod, "a Pipe task's pod template must render exactly one v1 Pod (got %d objects)", len(objs))
	}
	pipe := &plan.Pipe{Pod: objs[0]}
	names, _ := data["Pipes"].(map[string]string)
	for _, pf := range t.Spec.Pipe {
		switch {
		case !pipeKey.MatchString(pf.Key):
			return nil, r.fail(t.Name, "", "pipe key %q must match %s; rename it", pf.Key, pipeKey)
		case pf.Kind != "Secret" && pf.Kind != "ConfigMap":
			return nil, r.fail(t.Name, "", "pipe %s has kind %q; use Secret or ConfigMap", pf.Key, pf.Kind)
		case (pf.File == "") == (pf.EnvFile == ""):
			return nil, r.fail(t.Name, "", "pipe %s needs exactly one of file and envFile", pf.Key)
		}
		pipe.Files = append(pipe.Files, plan.PipeFile{File: pf.File, EnvFile: pf.EnvFile, Kind: pf.Kind, Key: pf.Key, Name: names[pf.Key]})
	}
	return pipe, nil
}

// PipeName is the name of the object a pipe fills: the parts joined by
// dots, lowercased, with characters a DNS subdomain forbids replaced by
// '-', empty labels dropped, and, beyond 253 characters, cut and suffixed
// with a hash of the whole so that it stays unique and stable.
func PipeName(instance, planName, phase, step, task, key string) string {
	full := strings.Join([]string{instance, planName, phase, step, task, key}, ".")
	mapped := strings.Map(func(c rune) rune {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
			return c
		case c >= 'A' && c <= 'Z':
			return c + 'a' - 'A'
		}
		return '-'
	}, full)
	var labels []string
	for _, label := range strings.Split(mapped, ".") {
		if label = strings.Trim(label, "-"); label != "" {
			labels = append(labels, label)
		}
	}
	name := strings.Join(labels, ".")
	if name == "" {
		name = "pipe"
	}
	if len(name) <= 253 {
		return name
	}
	sum := sha256.Sum256([]byte(full))
	return strings.TrimRight(name[:253-9], "-.") + "-" + hex.EncodeToString(sum[:4])
}

// document is one YAML document of rendered output.
type document struct {
	// line is the document's first line in the output.
	line  int
	value any
}

var documentSeparator = regexp.MustCompile(`^---(\s.*)?$`)

// parseDocuments splits rendered output at "---" lines and reads each
// document as YAML 1.1 (as kubectl and KUDO do: sigs.k8s.io/yaml) into
// JSON-compatible values, integers as int64. Empty and comment-only
// documents are dropped.
func parseDocuments(text string) ([]document, error) {
	var docs []document
	var cur strings.Builder
	start, lineNo := 1, 0
	flush := func() error {
		defer cur.Reset()
		raw := cur.String()
		if strings.TrimSpace(raw) == "" {
			return nil
		}
		j, err := yaml.YAMLToJSON([]byte(raw))
		if err != nil {
			return fmt.Errorf("document %d (output line %d) is not valid YAML: %v", len(docs)+1, start, strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
		}
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("document %d (output line %d): %v", len(docs)+1, start, err)
		}
		if v == nil {
			return nil
		}
		docs = append(docs, document{line: start, value: jsonNumbers(v)})
		return nil
	}
	for line := range strings.Lines(text) {
		lineNo++
		if documentSeparator.MatchString(strings.TrimRight(line, "\r\n")) {
			if err := flush(); err != nil {
				return nil, err
			}
			start = lineNo + 1
			continue
		}
		cur.WriteString(line)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return docs, nil
}

// jsonNumbers turns json.Number into int64 or float64, as unstructured
// objects hold them.
func jsonNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			v[k] = jsonNumbers(item)
		}
	case []any:
		for i, item := range v {
			v[i] = jsonNumbers(item)
		}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	}
	return v
}

// ParseObjects reads rendered multi-document YAML into objects, in
// document order, skipping empty and comment-only documents. Every
// document must be an object with apiVersion, kind and metadata.name;
// unknown kinds are fine. Errors name the document and its first line.
func ParseObjects(text string) ([]*unstructured.Unstructured, error) {
	docs, err := parseDocuments(text)
	if err != nil {
		return nil, err
	}
	objs := make([]*unstructured.Unstructured, 0, len(docs))
	for i, doc := range docs {
		m, ok := doc.value.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("document %d (output line %d) is %s, not an object; a template renders Kubernetes objects", i+1, doc.line, describeValue(doc.value))
		}
		obj := &unstructured.Unstructured{Object: m}
		var missing []string
		if obj.GetAPIVersion() == "" {
			missing = append(missing, "apiVersion")
		}
		if obj.GetKind() == "" {
			missing = append(missing, "kind")
		}
		if obj.GetName() == "" {
			missing = append(missing, "metadata.name")
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("document %d (output line %d) has no %s; every object needs apiVersion, kind and metadata.name", i+1, doc.line, strings.Join(missing, ", "))
		}
		objs = append(objs, obj)
	}
	return objs, nil
}
