// Merge builds the effective package of an extension (KUDO KEP-0012,
// "operator extensions"), which KUDO never implemented. The KEP leaves
// much open; these are Annex's answers, each pinned by a test in
// merge_test.go.
//
// Inheritance. Everything of the base is inherited: tasks, plans,
// parameters, groups, templates, namespaceManifest, and maintainers when
// the extension lists none. The extension's name and operatorVersion are
// always its own; appVersion, description, url and kudoVersion are its own
// when set, else the base's (an extension of MySQL still runs MySQL).
// kubernetesVersion is the higher of the two: both are minimums and the
// merged package runs the base's templates too (a warning says so when
// the extension declares a lower one). The result has no Extends: it is
// self-contained, renders on its own, and must not be merged again.
//
// Tasks and plans. An extension's task or plan replaces the base's of
// the same name, in place; new ones follow the base's. `from: base/<task>`
// starts from that base task: its kind, its spec, its resources and
// patches (as the base wrote them, so as "base/<path>", which the KEP
// calls equivalent: `from: base/init` = `resources: [base/init.yaml]`).
// Then the extension's own fields win: a kind or a spec field it sets
// replaces the base's; a resource or patch of its own replaces the base's
// of the same path in place and any other is appended (the KEP: "resources
// and patches that overlap with base resource and patch names replace"
// them). To drop a base resource, define the task without `from`. An
// extension plan with neither phases nor steps that names a base plan
// keeps the base plan's phases (its strategy, if set, wins); one naming
// no base plan is an error.
//
// Templates. A task of the extension names a base template as
// "base/<path>" (the KEP's prefix). The merged Templates hold every base
// template under "base/<path>", and under "<path>" as well unless the
// extension has a template of that path. So a template of the extension
// replaces the base's for the inherited base tasks too; that is how an
// extension replaces a template. The base/ prefix stacks along a chain
// ("base/base/x.yaml" is the grandbase's), and references in inherited
// tasks are rewritten to keep meaning what they meant in their package.
// templates/base/ is reserved in an extension.
//
// Parameters merge field by field, names compared case-insensitively as
// in KUDO: a field the extension sets wins, one it leaves out keeps the
// base's (a new default keeps the base's description). The base's
// spelling of the name stays (its templates use it). New parameters
// follow the base's, in the extension's order. An extension cannot remove
// a base's default. Groups merge the same way by name.
//
// Spellings (NormalizeOperator). The KEP writes the patch list as
// `patches`, `patch` and, once, `path` (a slip in its first text), at the
// task level; its later text moves `from` and `patch` under `spec`. All
// are read and normalised to Task.From and Task.Patches; `path` draws a
// warning. `extends` is read flat ({operator, version}, `name` for
// `operator`) or nested under `kudo` as the KEP writes it. A plan written
// with `steps` and no `phases` (the KEP's plans) becomes one phase named
// after the plan whose steps run serially unless the plan says
// `strategy: parallel` (the KEP's load plan loads, then cleans up). A step
// with `delete: true` (KUDO <= 0.7, the KEP's first text) runs a Delete
// task "<task>-cleanup" for each of its tasks, the form the KEP's later
// text spells out; one of that name already defined is used if it is a
// Delete task.
//
// Versions. extends.version is a semver range matched against the base's
// operatorVersion or, failing that, its appVersion: the KEP's "5.7" is
// the appVersion of KUDO's MySQL package (operatorVersion 0.3.0).
//
// Errors. `from` naming a task the base lacks, a step naming a task
// neither package defines, a resource or patch naming a missing template,
// and a trigger naming a missing plan are errors that say which object is
// at fault and what exists.

package pkg

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// BasePrefix starts a template path, or a task's `from`, that names the
// base's (KEP-0012).
const BasePrefix = "base/"

// Merge returns the effective package of ext, an extension of base. Both
// are read, never modified, and the result shares no memory with them.
// base must itself be effective (extend nothing): merge a chain with
// MergeChain. Warnings are for the extension's author and stop nothing.
// An error means ext cannot be built on base; it names the task, plan,
// step, parameter or template at fault and what to change.
func Merge(base, ext *Package) (*Package, []string, error) {
	if base == nil || ext == nil {
		return nil, nil, errors.New("merge: both a base and an extension are needed")
	}
	m := &merger{base: clonePackage(base), ext: clonePackage(ext)}
	return m.merge()
}

// MergeChain merges an N-level chain, chain[0] the root base (which
// extends nothing) and each later package an extension of the one before:
// Merge(Merge(chain[0], chain[1]), chain[2])… A chain of one returns a
// normalised copy of its package.
func MergeChain(chain []*Package) (*Package, []string, error) {
	if len(chain) == 0 {
		return nil, nil, errors.New("merge: empty chain; give at least the root package")
	}
	if chain[0] == nil {
		return nil, nil, errors.New("merge: chain[0] is nil")
	}
	if x := chain[0].Operator.Extends; x != nil {
		return nil, nil, fmt.Errorf("merge: the chain starts at %s, which extends %q; start it at the package that extends nothing",
			pkgID(chain[0]), extendsName(x))
	}
	acc := clonePackage(chain[0])
	warnings, err := NormalizeOperator(&acc.Operator)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", pkgID(acc), err)
	}
	warnings = prefixWarnings(pkgID(acc), warnings)
	for _, next := range chain[1:] {
		merged, w, err := Merge(acc, next)
		if err != nil {
			return nil, nil, err
		}
		acc, warnings = merged, append(warnings, w...)
	}
	return acc, warnings, nil
}

// MatchesBase reports whether base satisfies versionRange (a semver
// range, as extends.version writes it) by its operatorVersion or, failing
// that, its appVersion. An empty range matches any base; one that does not
// parse matches none. Either version may match, so an open range meant
// for operatorVersion (">=1.0.0") also matches an appVersion 5.7: bound it
// (">=1.0.0 <2.0.0").
func MatchesBase(base *Package, versionRange string) bool {
	if strings.TrimSpace(versionRange) == "" {
		return true
	}
	c, err := semver.NewConstraint(versionRange)
	if err != nil {
		return false
	}
	for _, v := range []string{base.Operator.OperatorVersion, base.Operator.AppVersion} {
		if sv, err := semver.NewVersion(v); err == nil && c.Check(sv) {
			return true
		}
	}
	return false
}

// NormalizeOperator rewrites op in place to the one spelling the rest of
// the engine reads (see the file comment): the patch keys into
// Task.Patches, spec.from into Task.From, extends.kudo and extends.name
// into extends.operator, plans of `steps` into one phase, `delete: true`
// steps into "<task>-cleanup" Delete tasks. It is idempotent; a reader may
// call it on every package, Merge calls it on both of its own. An error
// names the task or step written two conflicting ways.
func NormalizeOperator(op *Operator) ([]string, error) {
	var warnings []string
	var errs []error
	if op.Extends != nil {
		x, err := normalizeExtends(op.Extends)
		if err != nil {
			errs = append(errs, err)
		} else {
			op.Extends = x
		}
	}
	for i := range op.Tasks {
		w, err := normalizeTask(&op.Tasks[i])
		warnings = append(warnings, w...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range sortedNames(op.Plans) {
		p := op.Plans[name]
		if len(p.Steps) > 0 {
			if len(p.Phases) > 0 {
				errs = append(errs, fmt.Errorf("plan %s: has both phases and steps; put the steps in a phase", name))
				continue
			}
			strategy := "serial"
			if p.Strategy == "parallel" {
				strategy = "parallel"
			}
			p = PlanSpec{Strategy: "serial", Phases: []Phase{{Name: name, Strategy: strategy, Steps: p.Steps}}}
		}
		for i := range p.Phases {
			for j := range p.Phases[i].Steps {
				st := &p.Phases[i].Steps[j]
				if !st.Delete {
					continue
				}
				w, err := deleteStep(op, name, st)
				warnings = append(warnings, w...)
				if err != nil {
					errs = append(errs, err)
				}
			}
		}
		op.Plans[name] = p
	}
	return warnings, errors.Join(errs...)
}

// normalizeExtends folds the KEP's spellings of extends into Operator and
// Version.
func normalizeExtends(x *Extends) (*Extends, error) {
	names := []string{x.Operator, x.Name}
	versions := []string{x.Version}
	if k := x.Kudo; k != nil {
		names = append(names, k.Operator, k.Name)
		versions = append(versions, k.Version)
	}
	name, err := oneValue("extends: the base is named", names)
	if err != nil {
		return nil, err
	}
	version, err := oneValue("extends: the version is given", versions)
	if err != nil {
		return nil, err
	}
	return &Extends{Operator: name, Version: version}, nil
}

// oneValue returns the one non-empty value of vs, or an error when two
// differ.
func oneValue(what string, vs []string) (string, error) {
	var out string
	for _, v := range vs {
		switch {
		case v == "" || v == out:
		case out == "":
			out = v
		default:
			return "", fmt.Errorf("%s both as %q and %q; keep one", what, out, v)
		}
	}
	return out, nil
}

// normalizeTask moves the KEP's other spellings of from and patches into
// Task.From and Task.Patches.
func normalizeTask(t *Task) ([]string, error) {
	var warnings []string
	spellings := []struct {
		key  string
		list []string
	}{
		{"patches", t.Patches}, {"patch", t.PatchAlias}, {"path", t.PathAlias},
		{"spec.patches", t.Spec.Patches}, {"spec.patch", t.Spec.PatchAlias},
	}
	var used []string
	for _, s := range spellings {
		if len(s.list) > 0 {
			used = append(used, s.key)
			t.Patches = s.list
		}
	}
	if len(used) > 1 {
		return nil, fmt.Errorf("task %s: patches are listed under both %s; keep one list, under patches", t.Name, strings.Join(used, " and "))
	}
	if slices.Equal(used, []string{"path"}) {
		warnings = append(warnings, fmt.Sprintf("task %s: `path` is read as `patches` (KEP-0012's first text misspells it once); write patches", t.Name))
	}
	t.PatchAlias, t.PathAlias, t.Spec.Patches, t.Spec.PatchAlias = nil, nil, nil, nil
	if t.Spec.From != "" {
		if t.From != "" && t.From != t.Spec.From {
			return nil, fmt.Errorf("task %s: from is both %q and spec.from %q; keep one", t.Name, t.From, t.Spec.From)
		}
		t.From, t.Spec.From = t.Spec.From, ""
	}
	return warnings, nil
}

// deleteStep rewrites a `delete: true` step of plan to run a Delete task
// "<task>-cleanup" per task, adding those tasks to op where missing.
func deleteStep(op *Operator, plan string, st *Step) ([]string, error) {
	where := fmt.Sprintf("plan %s, step %s", plan, st.Name)
	names := make([]string, len(st.Tasks))
	for i, name := range st.Tasks {
		cleanup := name + "-cleanup"
		names[i] = cleanup
		if t, ok := taskByName(op.Tasks, cleanup); ok {
			if t.Kind != KindDelete {
				return nil, fmt.Errorf("%s: delete: true runs task %s as a Delete task %q, but that task is of kind %q; rename it or write the step without delete: true",
					where, name, cleanup, t.Kind)
			}
			continue
		}
		switch t, ok := taskByName(op.Tasks, name); {
		case ok:
			t = cloneTask(t)
			t.Name, t.Kind = cleanup, KindDelete
			op.Tasks = append(op.Tasks, t)
		case op.Extends != nil:
			op.Tasks = append(op.Tasks, Task{Name: cleanup, Kind: KindDelete, From: BasePrefix + name})
		default:
			return nil, fmt.Errorf("%s: delete: true names task %s, which the package does not define", where, name)
		}
	}
	st.Tasks, st.Delete = names, false
	return []string{fmt.Sprintf("%s: delete: true is read as Delete tasks %s; write them so (KEP-0012's later form)",
		where, strings.Join(names, ", "))}, nil
}

// merger holds the two packages of one Merge, both private copies.
type merger struct {
	base, ext *Package
	warnings  []string
}

func (m *merger) merge() (*Package, []string, error) {
	bw, err := NormalizeOperator(&m.base.Operator)
	if err != nil {
		return nil, nil, fmt.Errorf("base %s: %w", pkgID(m.base), err)
	}
	ew, err := NormalizeOperator(&m.ext.Operator)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", pkgID(m.ext), err)
	}
	m.warnings = append(prefixWarnings(pkgID(m.base), bw), prefixWarnings(pkgID(m.ext), ew)...)
	if err := m.checkExtends(); err != nil {
		return nil, nil, err
	}
	out := &Package{Operator: m.metadata()}
	if out.Templates, err = m.templates(); err != nil {
		return nil, nil, err
	}
	if out.Operator.Tasks, err = m.tasks(); err != nil {
		return nil, nil, err
	}
	if out.Operator.Plans, err = m.plans(); err != nil {
		return nil, nil, err
	}
	if out.Params, err = m.params(); err != nil {
		return nil, nil, err
	}
	if err := m.validate(out); err != nil {
		return nil, nil, err
	}
	return out, m.warnings, nil
}

// checkExtends makes sure ext extends base, by name and version range.
func (m *merger) checkExtends() error {
	b, x := m.base.Operator, m.ext.Operator.Extends
	switch {
	case b.Extends != nil:
		return fmt.Errorf("base %s extends %q itself; merge it onto its own base first (MergeChain)", pkgID(m.base), extendsName(b.Extends))
	case x == nil:
		return fmt.Errorf("%s extends no package: its operator.yaml has no extends", pkgID(m.ext))
	case x.Operator != b.Name:
		return fmt.Errorf("%s extends %q, not %q; its base must be a version of %q", pkgID(m.ext), x.Operator, b.Name, x.Operator)
	}
	if strings.TrimSpace(x.Version) == "" {
		return nil
	}
	if _, err := semver.NewConstraint(x.Version); err != nil {
		return fmt.Errorf("%s: extends.version %q is not a version range (%v); write one such as \">=1.0.0 <2.0.0\"", pkgID(m.ext), x.Version, err)
	}
	if !MatchesBase(m.base, x.Version) {
		return fmt.Errorf("%s extends %s %q, which neither operatorVersion %q nor appVersion %q of the base satisfies; pick a base in range or widen extends.version",
			pkgID(m.ext), x.Operator, x.Version, b.OperatorVersion, b.AppVersion)
	}
	return nil
}

// metadata is operator.yaml's own fields of the merged package.
func (m *merger) metadata() Operator {
	b, e := m.base.Operator, m.ext.Operator
	op := Operator{
		APIVersion:        firstSet(e.APIVersion, b.APIVersion),
		Name:              e.Name,
		Description:       firstSet(e.Description, b.Description),
		OperatorVersion:   e.OperatorVersion,
		AppVersion:        firstSet(e.AppVersion, b.AppVersion),
		KudoVersion:       firstSet(e.KudoVersion, b.KudoVersion),
		KubernetesVersion: m.kubernetesVersion(),
		Maintainers:       e.Maintainers,
		URL:               firstSet(e.URL, b.URL),
		NamespaceManifest: firstSet(e.NamespaceManifest, inherited(b.NamespaceManifest)),
	}
	if len(op.Maintainers) == 0 {
		op.Maintainers = b.Maintainers
	}
	return op
}

// kubernetesVersion is the higher of the two minimums.
func (m *merger) kubernetesVersion() string {
	b, e := m.base.Operator.KubernetesVersion, m.ext.Operator.KubernetesVersion
	if b == "" || e == "" {
		return firstSet(e, b)
	}
	bv, err1 := semver.NewVersion(b)
	ev, err2 := semver.NewVersion(e)
	if err1 != nil || err2 != nil || !ev.LessThan(bv) {
		return e
	}
	m.warnings = append(m.warnings, fmt.Sprintf("%s: kubernetesVersion %s is lower than its base's %s; the merged package needs %s, as it runs the base's templates",
		pkgID(m.ext), e, b, b))
	return b
}

// templates holds the base's templates under base/<path>, and under
// <path> unless the extension has that path, plus the extension's.
func (m *merger) templates() (map[string]string, error) {
	out := make(map[string]string, 2*len(m.base.Templates)+len(m.ext.Templates))
	for path, text := range m.base.Templates {
		out[BasePrefix+path] = text
		if _, replaced := m.ext.Templates[path]; !replaced && !strings.HasPrefix(path, BasePrefix) {
			out[path] = text
		}
	}
	for _, path := range sortedNames(m.ext.Templates) {
		if strings.HasPrefix(path, BasePrefix) {
			return nil, fmt.Errorf("%s: templates/%s: an extension's templates/base/ is reserved for its base's templates; move the file", pkgID(m.ext), path)
		}
		out[path] = m.ext.Templates[path]
	}
	return out, nil
}

// tasks are the base's, rebased, with the extension's replacing them in
// place or following them.
func (m *merger) tasks() ([]Task, error) {
	baseTasks := map[string]Task{}
	out := make([]Task, 0, len(m.base.Operator.Tasks)+len(m.ext.Operator.Tasks))
	at := map[string]int{}
	for _, t := range m.base.Operator.Tasks {
		baseTasks[t.Name] = t
		at[t.Name] = len(out)
		out = append(out, rebase(cloneTask(t), inherited))
	}
	seen := map[string]bool{}
	for _, t := range m.ext.Operator.Tasks {
		if seen[t.Name] {
			return nil, fmt.Errorf("%s: task %s is defined twice; keep one", pkgID(m.ext), t.Name)
		}
		seen[t.Name] = true
		if t.From != "" {
			var err error
			if t, err = m.fromBase(t, baseTasks); err != nil {
				return nil, err
			}
		}
		if i, ok := at[t.Name]; ok {
			out[i] = t
			continue
		}
		at[t.Name] = len(out)
		out = append(out, t)
	}
	return out, nil
}

// fromBase resolves `from: base/<task>`: the base task as the base wrote
// it, then t's own fields over it.
func (m *merger) fromBase(t Task, baseTasks map[string]Task) (Task, error) {
	name, ok := strings.CutPrefix(t.From, BasePrefix)
	if !ok || name == "" {
		return t, fmt.Errorf("%s: task %s: from %q must be base/<task>, a task of the base", pkgID(m.ext), t.Name, t.From)
	}
	bt, ok := baseTasks[name]
	if !ok {
		names := make([]string, 0, len(baseTasks))
		for n := range baseTasks {
			names = append(names, n)
		}
		sort.Strings(names)
		return t, fmt.Errorf("%s: task %s: from %s: the base %s has no task %q; its tasks are %s",
			pkgID(m.ext), t.Name, t.From, pkgID(m.base), name, strings.Join(names, ", "))
	}
	out := rebase(cloneTask(bt), viaBase)
	out.Name, out.From = t.Name, ""
	out.Kind = firstSet(t.Kind, out.Kind)
	out.Spec.Resources = overlay(out.Spec.Resources, t.Spec.Resources)
	out.Patches = overlay(out.Patches, t.Patches)
	s, o := t.Spec, &out.Spec
	o.Parameter = firstSet(s.Parameter, o.Parameter)
	o.Pod = firstSet(s.Pod, o.Pod)
	if len(s.Pipe) > 0 {
		o.Pipe = s.Pipe
	}
	o.Package = firstSet(s.Package, o.Package)
	o.OperatorVersion = firstSet(s.OperatorVersion, o.OperatorVersion)
	o.AppVersion = firstSet(s.AppVersion, o.AppVersion)
	o.InstanceName = firstSet(s.InstanceName, o.InstanceName)
	o.ParameterFile = firstSet(s.ParameterFile, o.ParameterFile)
	o.WantErr, o.Fatal, o.Done = o.WantErr || s.WantErr, o.Fatal || s.Fatal, o.Done || s.Done
	return out, nil
}

// overlay puts each of own over base's list: in place of the base entry
// of the same path (written "x" or "base/x" when the base entry is
// "base/x"), else at the end.
func overlay(base, own []string) []string {
	out := slices.Clone(base)
	for _, p := range own {
		i := slices.IndexFunc(out, func(b string) bool { return b == p || b == BasePrefix+p })
		if i < 0 {
			out = append(out, p)
			continue
		}
		out[i] = p
	}
	return out
}

// plans are the base's, with the extension's replacing or joining them.
func (m *merger) plans() (map[string]PlanSpec, error) {
	out := make(map[string]PlanSpec, len(m.base.Operator.Plans)+len(m.ext.Operator.Plans))
	for name, p := range m.base.Operator.Plans {
		out[name] = p
	}
	for _, name := range sortedNames(m.ext.Operator.Plans) {
		p := m.ext.Operator.Plans[name]
		if len(p.Phases) == 0 {
			bp, ok := m.base.Operator.Plans[name]
			if !ok {
				return nil, fmt.Errorf("%s: plan %s has no phases or steps, and the base %s has no plan %s to keep them from; give it steps",
					pkgID(m.ext), name, pkgID(m.base), name)
			}
			p.Phases = bp.Phases
			p.Strategy = firstSet(p.Strategy, bp.Strategy)
		}
		out[name] = p
	}
	return out, nil
}

// params merges params.yaml field by field.
func (m *merger) params() (Params, error) {
	b, e := m.base.Params, m.ext.Params
	out := Params{APIVersion: firstSet(e.APIVersion, b.APIVersion), Groups: b.Groups}
	for _, g := range e.Groups {
		i := slices.IndexFunc(out.Groups, func(bg Group) bool { return bg.Name == g.Name })
		if i < 0 {
			out.Groups = append(out.Groups, g)
			continue
		}
		bg := &out.Groups[i]
		bg.DisplayName = firstSet(g.DisplayName, bg.DisplayName)
		bg.Description = firstSet(g.Description, bg.Description)
		if g.Prio != 0 {
			bg.Prio = g.Prio
		}
	}
	out.Parameters = b.Parameters
	at := map[string]int{}
	for i, p := range out.Parameters {
		at[strings.ToLower(p.Name)] = i
	}
	seen := map[string]string{}
	for _, p := range e.Parameters {
		key := strings.ToLower(p.Name)
		if prev, dup := seen[key]; dup {
			return Params{}, fmt.Errorf("%s: parameter %s is defined twice (as %s too; names are case-insensitive); keep one", pkgID(m.ext), p.Name, prev)
		}
		seen[key] = p.Name
		if i, ok := at[key]; ok {
			out.Parameters[i] = m.mergeParam(out.Parameters[i], p)
			continue
		}
		out.Parameters = append(out.Parameters, p)
	}
	return out, nil
}

// mergeParam is b with every field e sets.
func (m *merger) mergeParam(b, e Param) Param {
	if e.Name != b.Name {
		m.warnings = append(m.warnings, fmt.Sprintf("%s: parameter %s is the base's %s; the merged package keeps the base's spelling, which its templates use",
			pkgID(m.ext), e.Name, b.Name))
	}
	if e.Type != "" && effectiveType(e.Type) != effectiveType(b.Type) {
		m.warnings = append(m.warnings, fmt.Sprintf("%s: parameter %s changes type from %s to %s; the base's templates may expect %s",
			pkgID(m.ext), b.Name, effectiveType(b.Type), e.Type, effectiveType(b.Type)))
	}
	out := b
	out.DisplayName = firstSet(e.DisplayName, b.DisplayName)
	out.Description = firstSet(e.Description, b.Description)
	out.Trigger = firstSet(e.Trigger, b.Trigger)
	out.Type = firstSet(e.Type, b.Type)
	out.Group = firstSet(e.Group, b.Group)
	out.Hint = firstSet(e.Hint, b.Hint)
	if e.Default != nil {
		out.Default = e.Default
	}
	if e.Enum != nil {
		out.Enum = e.Enum
	}
	for _, f := range []struct{ dst, src **bool }{{&out.Required, &e.Required}, {&out.Immutable, &e.Immutable}, {&out.Advanced, &e.Advanced}} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	return out
}

// validate checks the references that cross the base/extension line:
// steps to tasks, tasks to templates, triggers to plans.
func (m *merger) validate(p *Package) error {
	var errs []error
	neither := fmt.Sprintf("neither %s nor its base %s defines it", pkgID(m.ext), pkgID(m.base))
	tasks := map[string]bool{}
	var taskNames []string
	for _, t := range p.Operator.Tasks {
		tasks[t.Name] = true
		taskNames = append(taskNames, t.Name)
	}
	for _, name := range sortedNames(p.Operator.Plans) {
		for _, ph := range p.Operator.Plans[name].Phases {
			for _, st := range ph.Steps {
				for _, t := range st.Tasks {
					if !tasks[t] {
						errs = append(errs, fmt.Errorf("plan %s, phase %s, step %s: task %s: %s; tasks are %s",
							name, ph.Name, st.Name, t, neither, strings.Join(taskNames, ", ")))
					}
				}
			}
		}
	}
	for _, t := range p.Operator.Tasks {
		if t.From != "" { // only a base task can still have one
			errs = append(errs, fmt.Errorf("task %s: from %s, but the base %s extends nothing to copy it from; write the task out in full",
				t.Name, t.From, pkgID(m.base)))
		}
		for _, r := range templateRefs(t) {
			if _, ok := p.Templates[r.path]; !ok {
				errs = append(errs, fmt.Errorf("task %s: %s %s: %s", t.Name, r.field, r.path, m.missingTemplate(r.path)))
			}
		}
	}
	if ns := p.Operator.NamespaceManifest; ns != "" {
		if _, ok := p.Templates[ns]; !ok {
			errs = append(errs, fmt.Errorf("namespaceManifest %s: %s", ns, m.missingTemplate(ns)))
		}
	}
	for _, prm := range p.Params.Parameters {
		if prm.Trigger == "" {
			continue
		}
		if _, ok := p.Operator.Plans[prm.Trigger]; !ok {
			errs = append(errs, fmt.Errorf("parameter %s: trigger %s: %s; plans are %s",
				prm.Name, prm.Trigger, neither, strings.Join(sortedNames(p.Operator.Plans), ", ")))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s on base %s: %w", pkgID(m.ext), pkgID(m.base), errors.Join(errs...))
	}
	return nil
}

// missingTemplate says where a template reference was looked for.
func (m *merger) missingTemplate(path string) string {
	if rest, ok := strings.CutPrefix(path, BasePrefix); ok {
		return fmt.Sprintf("the base %s has no template %s; base templates are named base/<path below its templates/>", pkgID(m.base), rest)
	}
	return fmt.Sprintf("no templates/%s in %s or its base %s; add the file or fix the path", path, pkgID(m.ext), pkgID(m.base))
}

// templateRef is one template path a task names, and the field naming it.
type templateRef struct{ field, path string }

// templateRefs lists every template path t names.
func templateRefs(t Task) []templateRef {
	var refs []templateRef
	for _, r := range t.Spec.Resources {
		refs = append(refs, templateRef{"resource", r})
	}
	for _, r := range t.Patches {
		refs = append(refs, templateRef{"patch", r})
	}
	if t.Spec.Pod != "" {
		refs = append(refs, templateRef{"spec.pod", t.Spec.Pod})
	}
	if t.Spec.ParameterFile != "" {
		refs = append(refs, templateRef{"spec.parameterFile", t.Spec.ParameterFile})
	}
	return refs
}

// rebase rewrites every template path of t with f.
func rebase(t Task, f func(string) string) Task {
	for i, r := range t.Spec.Resources {
		t.Spec.Resources[i] = f(r)
	}
	for i, r := range t.Patches {
		t.Patches[i] = f(r)
	}
	if t.Spec.Pod != "" {
		t.Spec.Pod = f(t.Spec.Pod)
	}
	if t.Spec.ParameterFile != "" {
		t.Spec.ParameterFile = f(t.Spec.ParameterFile)
	}
	return t
}

// inherited is what a base task's template path becomes in the merged
// package: "x" stays "x" (the extension's x if it has one, else the
// base's), "base/x" (the grandbase's) becomes "base/base/x".
func inherited(path string) string {
	if strings.HasPrefix(path, BasePrefix) {
		return BasePrefix + path
	}
	return path
}

// viaBase is a base task's template path as seen from the extension: the
// base's own template, whatever the extension replaces.
func viaBase(path string) string { return BasePrefix + path }

func taskByName(tasks []Task, name string) (Task, bool) {
	i := slices.IndexFunc(tasks, func(t Task) bool { return t.Name == name })
	if i < 0 {
		return Task{}, false
	}
	return tasks[i], true
}

// effectiveType is a parameter type with KUDO's default.
func effectiveType(t ParamType) ParamType { return firstSet(t, TypeString) }

// firstSet returns the first of its arguments that is not the zero value.
func firstSet[T comparable](vs ...T) T {
	var zero T
	for _, v := range vs {
		if v != zero {
			return v
		}
	}
	return zero
}

// pkgID names a package in messages: "mysql 0.1.0".
func pkgID(p *Package) string {
	return strings.TrimSpace(p.Operator.Name + " " + p.Operator.OperatorVersion)
}

// extendsName is the base an unnormalised extends names.
func extendsName(x *Extends) string {
	if x.Kudo != nil {
		return firstSet(x.Operator, x.Name, x.Kudo.Operator, x.Kudo.Name)
	}
	return firstSet(x.Operator, x.Name)
}

// prefixWarnings puts the package the warnings are about before each.
func prefixWarnings(prefix string, ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = prefix + ": " + w
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// clonePackage deep-copies p, so that Merge can rewrite its copy.
func clonePackage(p *Package) *Package {
	out := &Package{Operator: p.Operator, Params: p.Params, Templates: maps.Clone(p.Templates)}
	op := &out.Operator
	op.Maintainers = slices.Clone(op.Maintainers)
	if x := op.Extends; x != nil {
		c := *x
		if x.Kudo != nil {
			k := *x.Kudo
			c.Kudo = &k
		}
		op.Extends = &c
	}
	if p.Operator.Tasks != nil {
		op.Tasks = make([]Task, len(p.Operator.Tasks))
		for i, t := range p.Operator.Tasks {
			op.Tasks[i] = cloneTask(t)
		}
	}
	if p.Operator.Plans != nil {
		op.Plans = make(map[string]PlanSpec, len(p.Operator.Plans))
		for name, pl := range p.Operator.Plans {
			op.Plans[name] = clonePlan(pl)
		}
	}
	out.Params.Groups = slices.Clone(p.Params.Groups)
	if p.Params.Parameters != nil {
		out.Params.Parameters = make([]Param, len(p.Params.Parameters))
		for i, prm := range p.Params.Parameters {
			out.Params.Parameters[i] = cloneParam(prm)
		}
	}
	return out
}

func cloneTask(t Task) Task {
	t.Patches = slices.Clone(t.Patches)
	t.PatchAlias = slices.Clone(t.PatchAlias)
	t.PathAlias = slices.Clone(t.PathAlias)
	t.Spec.Resources = slices.Clone(t.Spec.Resources)
	t.Spec.Pipe = slices.Clone(t.Spec.Pipe)
	t.Spec.Patches = slices.Clone(t.Spec.Patches)
	t.Spec.PatchAlias = slices.Clone(t.Spec.PatchAlias)
	return t
}

func clonePlan(p PlanSpec) PlanSpec {
	p.Steps = cloneSteps(p.Steps)
	p.Phases = slices.Clone(p.Phases)
	for i := range p.Phases {
		p.Phases[i].Steps = cloneSteps(p.Phases[i].Steps)
	}
	return p
}

func cloneSteps(steps []Step) []Step {
	steps = slices.Clone(steps)
	for i := range steps {
		steps[i].Tasks = slices.Clone(steps[i].Tasks)
	}
	return steps
}

func cloneParam(p Param) Param {
	p.Default = cloneValue(p.Default)
	if p.Enum != nil {
		p.Enum = cloneValue([]any(p.Enum)).([]any)
	}
	for _, b := range []**bool{&p.Required, &p.Immutable, &p.Advanced} {
		if *b != nil {
			v := **b
			*b = &v
		}
	}
	return p
}

// cloneValue deep-copies a decoded YAML value.
func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = cloneValue(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cloneValue(x)
		}
		return out
	default:
		return v
	}
}
