package pkg

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Severities of a Problem.
const (
	// SeverityError: the package will not install or will fail.
	SeverityError = "error"
	// SeverityWarning: the package works, but something is likely wrong or
	// outdated.
	SeverityWarning = "warning"
)

// Problem is one finding of Lint.
type Problem struct {
	// File is relative to the package root ("operator.yaml",
	// "templates/deployment.yaml").
	File string
	// Line is 1-based; 0 when the problem concerns the whole file.
	Line     int
	Severity string
	// Message says what is wrong and how to fix it.
	Message string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Severity, p.Message)
	}
	return fmt.Sprintf("%s: %s: %s", p.File, p.Severity, p.Message)
}

// Lint checks the package rooted at fsys and returns every problem,
// sorted by file, then line: files that do not load (see LoadDir),
// missing name or operatorVersion, versions that are not semantic
// versions, unknown keys, task kinds and task fields, references to
// templates, tasks, plans and parameters that do not exist, a missing
// deploy plan, parameter names, types, defaults and enums that do not
// fit, templates that are not valid Go templates, and Namespace objects
// outside namespaceManifest.
//
// A package that extends a base (KEP-0012) inherits the base's plans,
// tasks, templates and parameters, which Lint does not see: references
// to them are warnings, not errors, and `base/<x>` references are only
// allowed there. An empty result means no problem found.
func Lint(fsys fs.FS) []Problem {
	files, err := readPackageFiles(fsys)
	if err != nil {
		return []Problem{{Severity: SeverityError, Message: err.Error()}}
	}
	l := &linter{templates: files.templates}
	for _, name := range files.ignored {
		l.add(name, 0, SeverityWarning, "is not read: templates end in .yaml; rename it or move it out of templates/")
	}
	var op *Operator
	var opInfo, paramsInfo *fileInfo
	if !files.hasOperator {
		l.add(OperatorFile, 0, SeverityError, "is missing; a package has operator.yaml at its root")
	} else {
		o, info, err := parseOperator(files.operator)
		l.loadError(err)
		if info != nil {
			l.problems = append(l.problems, info.unknown...)
			l.problems = append(l.problems, info.legacy...)
		}
		if info != nil && len(info.lines) > 0 {
			op, opInfo = &o, info
		}
	}
	var params *Params
	if !files.hasParams {
		l.add(ParamsFile, 0, SeverityError, "is missing; a package has params.yaml at its root (it may be empty)")
	} else {
		p, info, err := parseParams(files.params)
		l.loadError(err)
		if info != nil {
			l.problems = append(l.problems, info.unknown...)
			l.problems = append(l.problems, info.legacy...)
		}
		if err == nil || (info != nil && len(info.lines) > 0) {
			params, paramsInfo = &p, info
		}
	}
	if op != nil {
		warnings, err := NormalizeOperator(op)
		for _, w := range warnings {
			l.add(OperatorFile, 0, SeverityWarning, "%s", w)
		}
		if err != nil {
			l.add(OperatorFile, 0, SeverityError, "%v", err)
		}
		l.extends = op.Extends != nil
		l.namespaceManifest = op.NamespaceManifest
		l.checkOperator(op, opInfo, params)
	}
	if params != nil {
		l.checkParams(params, paramsInfo, op)
	}
	l.checkTemplates()
	slices.SortStableFunc(l.problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Message, b.Message))
	})
	return l.problems
}

type linter struct {
	problems          []Problem
	templates         map[string]string
	extends           bool
	namespaceManifest string
}

func (l *linter) add(file string, line int, severity, format string, args ...any) {
	l.problems = append(l.problems, Problem{File: file, Line: line, Severity: severity, Message: fmt.Sprintf(format, args...)})
}

// inherited is the severity of a reference that may point into a base.
func (l *linter) inherited() string {
	if l.extends {
		return SeverityWarning
	}
	return SeverityError
}

func (l *linter) loadError(err error) {
	var le *LoadError
	switch {
	case err == nil:
	case errors.As(err, &le):
		l.add(le.File, le.Line, SeverityError, "%s", le.Message)
	default:
		l.add("", 0, SeverityError, "%v", err)
	}
}

func (l *linter) checkOperator(op *Operator, info *fileInfo, params *Params) {
	at := func(path string) int { return cmp.Or(info.line(path), 1) }
	if op.Name == "" {
		l.add(OperatorFile, 1, SeverityError, "name is missing; set name to the package's name")
	}
	if op.OperatorVersion == "" {
		l.add(OperatorFile, 1, SeverityError, "operatorVersion is missing; set it to the package's semantic version, such as 0.1.0")
	} else if _, err := semver.StrictNewVersion(op.OperatorVersion); err != nil {
		l.add(OperatorFile, at("operatorVersion"), SeverityError, "operatorVersion %q is not a semantic version; write it as MAJOR.MINOR.PATCH, such as 0.1.0", op.OperatorVersion)
	}
	if op.KubernetesVersion != "" {
		if _, err := semver.NewVersion(op.KubernetesVersion); err != nil {
			l.add(OperatorFile, at("kubernetesVersion"), SeverityError, "kubernetesVersion %q is not a semantic version; write the oldest supported version, such as 1.16.0", op.KubernetesVersion)
		}
	}
	if op.Extends == nil && info.line("extends") > 0 {
		l.add(OperatorFile, at("extends"), SeverityError, "extends is empty; name the base package (operator and version) or remove it")
	}
	if op.Extends != nil && op.Extends.Operator == "" && op.Extends.Name == "" {
		l.add(OperatorFile, at("extends"), SeverityError, "extends names no package; set extends.operator to the base package's name")
	}

	tasks := map[string]bool{}
	for i, t := range op.Tasks {
		path := fmt.Sprintf("tasks[%d]", i)
		line := at(path)
		if t.Name == "" {
			l.add(OperatorFile, line, SeverityError, "task %d has no name; name it", i+1)
		} else if tasks[t.Name] {
			l.add(OperatorFile, line, SeverityError, "task %q is defined twice; rename or remove one", t.Name)
		}
		tasks[t.Name] = true
		l.checkTask(t, path, at, params)
	}

	if op.NamespaceManifest != "" {
		if _, ok := l.templates[op.NamespaceManifest]; !ok {
			l.add(OperatorFile, at("namespaceManifest"), SeverityError, "namespaceManifest %q is not in templates/; add templates/%s or fix the name", op.NamespaceManifest, op.NamespaceManifest)
		}
	}
	if _, ok := op.Plans[PlanDeploy]; !ok && !l.extends {
		l.add(OperatorFile, at("plans"), SeverityError, "there is no deploy plan; every package needs plans.deploy, which installs it")
	}
	for _, name := range slices.Sorted(maps.Keys(op.Plans)) {
		p := op.Plans[name]
		path := "plans." + name
		l.checkStrategy(p.Strategy, path, at)
		for i, ph := range p.Phases {
			phPath := fmt.Sprintf("%s.phases[%d]", path, i)
			l.checkStrategy(ph.Strategy, phPath, at)
			for j, st := range ph.Steps {
				for k, task := range st.Tasks {
					if !tasks[task] {
						l.add(OperatorFile, at(fmt.Sprintf("%s.steps[%d].tasks[%d]", phPath, j, k)), l.inherited(),
							"plan %s, step %q names task %q, which tasks does not define; add the task or fix the name%s", name, st.Name, task, l.baseHint())
					}
				}
			}
		}
	}
}

func (l *linter) baseHint() string {
	if l.extends {
		return " (fine if the base package defines it)"
	}
	return ""
}

func (l *linter) checkStrategy(s, path string, at func(string) int) {
	if s != "" && s != "serial" && s != "parallel" {
		l.add(OperatorFile, at(path+".strategy"), SeverityWarning, "strategy %q is neither serial nor parallel and behaves as parallel; write one of them", s)
	}
}

var knownTaskKinds = []string{KindApply, KindDelete, KindToggle, KindPipe, KindKudoOperator, KindDummy}

func (l *linter) checkTask(t Task, path string, at func(string) int, params *Params) {
	line := at(path)
	if t.From != "" && !strings.HasPrefix(t.From, "base/") {
		l.add(OperatorFile, at(path+".from"), SeverityError, "task %q: from %q must name a base task as base/<task>", t.Name, t.From)
	} else if t.From != "" && !l.extends {
		l.add(OperatorFile, at(path+".from"), SeverityError, "task %q copies %s but the package does not extend a base; set extends or remove from", t.Name, t.From)
	}
	for i, patch := range t.Patches {
		l.checkTemplateRef(fmt.Sprintf("task %q: patch", t.Name), patch, at(fmt.Sprintf("%s.patches[%d]", path, i)))
	}
	switch t.Kind {
	case "":
		if t.From == "" {
			l.add(OperatorFile, line, SeverityError, "task %q has no kind; set kind to one of %s", t.Name, strings.Join(knownTaskKinds, ", "))
		}
	case KindApply, KindDelete, KindToggle:
		if len(t.Spec.Resources) == 0 && t.From == "" {
			l.add(OperatorFile, line, SeverityError, "task %q has no resources; list its templates under spec.resources", t.Name)
		}
		for i, res := range t.Spec.Resources {
			l.checkTemplateRef(fmt.Sprintf("task %q: resource", t.Name), res, at(fmt.Sprintf("%s.spec.resources[%d]", path, i)))
		}
		if t.Kind == KindToggle {
			l.checkToggle(t, path, at, params)
		}
	case KindPipe:
		if t.Spec.Pod == "" {
			l.add(OperatorFile, line, SeverityError, "task %q has no spec.pod; name the template of the pod that produces the files", t.Name)
		} else {
			l.checkTemplateRef(fmt.Sprintf("task %q: pod", t.Name), t.Spec.Pod, at(path+".spec.pod"))
		}
		for i, pf := range t.Spec.Pipe {
			pl := at(fmt.Sprintf("%s.spec.pipe[%d]", path, i))
			if !pipeKey.MatchString(pf.Key) {
				l.add(OperatorFile, pl, SeverityError, "task %q: pipe key %q must match %s; rename it", t.Name, pf.Key, pipeKey)
			}
			if pf.Kind != "Secret" && pf.Kind != "ConfigMap" {
				l.add(OperatorFile, pl, SeverityError, "task %q: pipe kind %q must be Secret or ConfigMap", t.Name, pf.Kind)
			}
			if (pf.File == "") == (pf.EnvFile == "") {
				l.add(OperatorFile, pl, SeverityError, "task %q: pipe %q needs exactly one of file and envFile", t.Name, pf.Key)
			}
		}
	case KindKudoOperator:
		if t.Spec.Package == "" {
			l.add(OperatorFile, line, SeverityError, "task %q has no spec.package; name the package it depends on", t.Name)
		}
	case KindDummy:
	default:
		l.add(OperatorFile, at(path+".kind"), SeverityError, "task %q has unknown kind %q; use one of %s", t.Name, t.Kind, strings.Join(knownTaskKinds, ", "))
	}
}

func (l *linter) checkToggle(t Task, path string, at func(string) int, params *Params) {
	if t.Spec.Parameter == "" {
		l.add(OperatorFile, at(path), SeverityError, "task %q is a Toggle without spec.parameter; name the boolean parameter that switches it", t.Name)
		return
	}
	if params == nil {
		return
	}
	for _, prm := range params.Parameters {
		if prm.Name == t.Spec.Parameter {
			return
		}
	}
	l.add(OperatorFile, at(path+".spec.parameter"), l.inherited(), "task %q toggles on parameter %q, which params.yaml does not declare; declare it or fix the name%s", t.Name, t.Spec.Parameter, l.baseHint())
}

// checkTemplateRef checks a reference to a template.
func (l *linter) checkTemplateRef(what, ref string, line int) {
	if rest, ok := strings.CutPrefix(ref, "base/"); ok {
		if !l.extends {
			l.add(OperatorFile, line, SeverityError, "%s %q refers to the base package, but this package does not extend one; set extends or use templates/%s", what, ref, rest)
		}
		return
	}
	if _, ok := l.templates[ref]; ok {
		return
	}
	l.add(OperatorFile, line, l.inherited(), "%s %q is not in templates/; add templates/%s or fix the name%s", what, ref, ref, l.baseHint())
}

func (l *linter) checkParams(params *Params, info *fileInfo, op *Operator) {
	at := func(path string) int { return cmp.Or(info.line(path), 1) }
	seen := map[string]string{}
	for i, prm := range params.Parameters {
		path := fmt.Sprintf("parameters[%d]", i)
		line := at(path)
		if prm.Name == "" {
			l.add(ParamsFile, line, SeverityError, "parameter %d has no name; name it", i+1)
			continue
		}
		if first, dup := seen[strings.ToLower(prm.Name)]; dup {
			l.add(ParamsFile, line, SeverityError, "parameter %q is declared twice (as %q before; names are case-insensitive); rename or remove one", prm.Name, first)
		}
		seen[strings.ToLower(prm.Name)] = prm.Name
		if strings.ContainsAny(prm.Name, ";,") {
			l.add(ParamsFile, line, SeverityError, "parameter %q: names must not contain ';' or ','; rename it", prm.Name)
		}
		typ := prm.paramType()
		if !validType(typ) {
			l.add(ParamsFile, at(path+".type"), SeverityError, "parameter %q has unknown type %q; use string, integer, number, boolean, array or map", prm.Name, typ)
			continue
		}
		if prm.isImmutable() && prm.Default == nil && !prm.isRequired() {
			l.add(ParamsFile, line, SeverityError, "parameter %q is immutable but has no default and is not required, so it could never be set; add a default or remove required: false", prm.Name)
		}
		for j, e := range prm.Enum {
			if _, err := convertValue(typ, e); err != nil {
				l.add(ParamsFile, at(fmt.Sprintf("%s.enum[%d]", path, j)), SeverityError, "parameter %q: enum value %s %v; fix it", prm.Name, describeValue(e), err)
			}
		}
		if prm.Default != nil {
			dl := at(path + ".default")
			if v, err := convertValue(typ, prm.Default); err != nil {
				l.add(ParamsFile, dl, SeverityError, "parameter %q: default %v; fix the default or the type", prm.Name, err)
			} else if len(prm.Enum) > 0 && !inEnum(typ, prm.Enum, v) {
				l.add(ParamsFile, dl, SeverityError, "parameter %q: default %s is not one of the enum %s; fix the default or the enum", prm.Name, describeValue(prm.Default), enumList(prm.Enum))
			}
		}
		if prm.Trigger != "" && op != nil {
			if _, ok := op.Plans[prm.Trigger]; !ok {
				l.add(ParamsFile, at(path+".trigger"), l.inherited(), "parameter %q triggers plan %q, which operator.yaml does not define; add the plan or fix the trigger%s", prm.Name, prm.Trigger, l.baseHint())
			}
		}
	}
}

// namespaceKind finds a top-level `kind: Namespace` line in a template.
var namespaceKind = regexp.MustCompile(`(?m)^kind:\s*["']?Namespace["']?\s*(#.*)?$`)

// templateLine reads the line of a text/template parse error
// ("template: name:12: ...").
var templateLine = regexp.MustCompile(`^template: .*?:(\d+):`)

func (l *linter) checkTemplates() {
	for _, name := range slices.Sorted(maps.Keys(l.templates)) {
		text := l.templates[name]
		file := TemplatesDir + "/" + name
		if _, err := parseTemplate(name, text); err != nil {
			line := 0
			if m := templateLine.FindStringSubmatch(err.Error()); m != nil {
				line, _ = strconv.Atoi(m[1])
			}
			l.add(file, line, SeverityError, "is not a valid Go template: %s; fix the template", strings.TrimPrefix(err.Error(), "template: "))
		}
		if name == l.namespaceManifest {
			continue
		}
		if loc := namespaceKind.FindStringIndex(text); loc != nil {
			line := strings.Count(text[:loc[0]], "\n") + 1
			l.add(file, line, SeverityError, "holds a Namespace; only the template named by namespaceManifest in operator.yaml may create one: move it there")
		}
	}
}
