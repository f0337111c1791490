// Package pkg is the package engine: Annex packages are KUDO operator
// packages (operator.yaml, params.yaml, templates/) plus `extends`
// (KUDO KEP-0012). It reads packages, merges an extension onto its base,
// validates parameters, chooses which plan a change runs and renders a
// plan into a plan.Plan of objects. Everything here is pure: no I/O beyond
// reading the package handed in.
package pkg

// APIVersion is the only apiVersion of operator.yaml and params.yaml (it
// is also the default when absent), as in KUDO.
const APIVersion = "kudo.dev/v1beta1"

// The plans KUDO gives a meaning to.
const (
	PlanDeploy  = "deploy"
	PlanUpdate  = "update"
	PlanUpgrade = "upgrade"
	PlanCleanup = "cleanup"
)

// Package is a package as read: operator.yaml, params.yaml and the
// templates. After Merge it is the effective package of an extension.
type Package struct {
	Operator Operator
	Params   Params
	// Templates maps a path below templates/ ("deployment.yaml",
	// "sub/x.yaml") to its text. After Merge, every template of the base
	// is under "base/<path>" and, unless the extension has a template of
	// that path (which then replaces it for the base's tasks too), under
	// "<path>" as well; along a chain the prefix stacks ("base/base/x").
	Templates map[string]string
}

// Operator is operator.yaml.
type Operator struct {
	APIVersion        string       `json:"apiVersion,omitempty"`
	Name              string       `json:"name"`
	Description       string       `json:"description,omitempty"`
	OperatorVersion   string       `json:"operatorVersion"`
	AppVersion        string       `json:"appVersion,omitempty"`
	KudoVersion       string       `json:"kudoVersion,omitempty"`
	KubernetesVersion string       `json:"kubernetesVersion,omitempty"`
	Maintainers       []Maintainer `json:"maintainers,omitempty"`
	URL               string       `json:"url,omitempty"`
	// Extends names the base package (KEP-0012). Merge's result has none:
	// it is self-contained.
	Extends           *Extends            `json:"extends,omitempty"`
	Tasks             []Task              `json:"tasks,omitempty"`
	Plans             map[string]PlanSpec `json:"plans,omitempty"`
	NamespaceManifest string              `json:"namespaceManifest,omitempty"`
}

// Maintainer is one maintainer of a package.
type Maintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// Extends names a base package: KEP-0012 spells the name key `operator`;
// `name` is accepted too. Version is a range matched against the base's
// operatorVersion or, when that does not match, its appVersion (the KEP's
// own example, "5.7", is the MySQL package's appVersion).
type Extends struct {
	Operator string `json:"operator,omitempty"`
	Name     string `json:"name,omitempty"`
	Version  string `json:"version,omitempty"`
	// Kudo is the KEP's nested spelling, `extends: {kudo: {operator,
	// version}}`. NormalizeOperator folds it (and Name) into Operator and
	// Version and clears it.
	Kudo *Extends `json:"kudo,omitempty"`
}

// Task is one task of operator.yaml.
type Task struct {
	Name string   `json:"name"`
	Kind string   `json:"kind,omitempty"`
	Spec TaskSpec `json:"spec,omitempty"`
	// From copies a base task ("base/<task>") in an extension (KEP-0012).
	From string `json:"from,omitempty"`
	// Patches apply to the task's rendered resources (KEP-0012); each is a
	// template path whose content is a strategic-merge patch or a JSON
	// 6902 patch, decided by content.
	Patches []string `json:"patches,omitempty"`
	// PatchAlias (`patch`) and PathAlias (`path`) are the KEP's other
	// spellings of `patches`. NormalizeOperator moves them into Patches
	// and clears them; nothing after it reads these fields.
	PatchAlias []string `json:"patch,omitempty"`
	PathAlias  []string `json:"path,omitempty"`
}

// TaskSpec inlines the fields of every task kind; the kind decides which
// are read.
type TaskSpec struct {
	// Apply, Delete, Toggle: template paths.
	Resources []string `json:"resources,omitempty"`
	// Toggle: the boolean parameter that switches Apply (true) or Delete.
	Parameter string `json:"parameter,omitempty"`
	// Pipe: the pod template and the files to copy.
	Pod  string     `json:"pod,omitempty"`
	Pipe []PipeSpec `json:"pipe,omitempty"`
	// KudoOperator: the package depended on.
	Package         string `json:"package,omitempty"`
	OperatorVersion string `json:"operatorVersion,omitempty"`
	AppVersion      string `json:"appVersion,omitempty"`
	InstanceName    string `json:"instanceName,omitempty"`
	ParameterFile   string `json:"parameterFile,omitempty"`
	// Dummy.
	WantErr bool `json:"wantErr,omitempty"`
	Fatal   bool `json:"fatal,omitempty"`
	Done    bool `json:"done,omitempty"`
	// From, Patches and PatchAlias (`patch`) are where the KEP's later
	// text writes Task.From and Task.Patches (under spec).
	// NormalizeOperator moves them to the Task and clears them.
	From       string   `json:"from,omitempty"`
	Patches    []string `json:"patches,omitempty"`
	PatchAlias []string `json:"patch,omitempty"`
}

// PipeSpec is one file a Pipe task copies.
type PipeSpec struct {
	File    string `json:"file,omitempty"`
	EnvFile string `json:"envFile,omitempty"`
	Kind    string `json:"kind"`
	Key     string `json:"key"`
}

// PlanSpec is one plan of operator.yaml as written; RenderPlan makes the
// executor's plan.Plan of it.
type PlanSpec struct {
	Strategy string  `json:"strategy,omitempty"`
	Phases   []Phase `json:"phases,omitempty"`
	// Steps is the KEP-0012 shorthand for a plan of one phase.
	// NormalizeOperator turns it into a phase named after the plan whose
	// steps run serially unless Strategy says "parallel".
	Steps []Step `json:"steps,omitempty"`
}

// Phase is one phase of a plan.
type Phase struct {
	Name     string `json:"name"`
	Strategy string `json:"strategy,omitempty"`
	Steps    []Step `json:"steps,omitempty"`
}

// Step is one step of a phase.
type Step struct {
	Name  string   `json:"name"`
	Tasks []string `json:"tasks,omitempty"`
	// Delete is KUDO <= 0.7's `delete: true`, which the first KEP-0012
	// text uses: the step deletes its tasks' resources instead of
	// applying them. NormalizeOperator replaces each task T with a Delete
	// task "T-cleanup" (the KEP's later spelling) and clears it.
	Delete bool `json:"delete,omitempty"`
}

// Params is params.yaml.
type Params struct {
	APIVersion string  `json:"apiVersion,omitempty"`
	Groups     []Group `json:"groups,omitempty"`
	Parameters []Param `json:"parameters,omitempty"`
}

// Group is a UI group of parameters.
type Group struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	Description string `json:"description,omitempty"`
	Prio        int    `json:"prio,omitempty"`
}

// ParamType is a parameter's type.
type ParamType string

const (
	TypeString  ParamType = "string"
	TypeInteger ParamType = "integer"
	TypeNumber  ParamType = "number"
	TypeBoolean ParamType = "boolean"
	TypeArray   ParamType = "array"
	TypeMap     ParamType = "map"
)

// Param is one parameter of params.yaml. Pointer fields distinguish
// "absent" from the zero value, which Merge needs (a field the extension
// leaves out keeps the base's).
type Param struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName,omitempty"`
	Description string `json:"description,omitempty"`
	// Default is any YAML value; nil when absent.
	Default any `json:"default,omitempty"`
	// Required defaults to true when absent, as in KUDO.
	Required *bool `json:"required,omitempty"`
	// Trigger names the plan a change of this parameter runs.
	Trigger   string `json:"trigger,omitempty"`
	Immutable *bool  `json:"immutable,omitempty"`
	// Type defaults to string.
	Type     ParamType `json:"type,omitempty"`
	Enum     []any     `json:"enum,omitempty"`
	Group    string    `json:"group,omitempty"`
	Hint     string    `json:"hint,omitempty"`
	Advanced *bool     `json:"advanced,omitempty"`
}
