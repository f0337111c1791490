package refdocs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// ReadCRDs reads every CustomResourceDefinition of the *.yaml files in
// dir (one per file, as controller-gen writes them), sorted by kind.
func ReadCRDs(dir string) ([]apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var kind struct{ Kind string }
		if err := yaml.Unmarshal(data, &kind); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if kind.Kind != "CustomResourceDefinition" {
			continue // a kustomization or another kind of file
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("%s holds no CustomResourceDefinition: run make generate first", dir)
	}
	slices.SortFunc(crds, func(a, b apiextensionsv1.CustomResourceDefinition) int {
		return strings.Compare(a.Spec.Names.Kind, b.Spec.Names.Kind)
	})
	return crds, nil
}

// API is the reference of the kinds crds define (sorted by kind, as
// ReadCRDs returns them): a table of contents, then per kind its resource
// names, printer columns, and every field of its schema with its type,
// whether it is required, its default, its validation (enum, bounds,
// pattern, list and map types, CEL rules with their messages) and its
// description. apiVersion, kind and metadata, the same for every kind,
// are left out.
func API(crds []apiextensionsv1.CustomResourceDefinition) string {
	var b strings.Builder
	b.WriteString("# API reference\n\n")
	groups := map[string]bool{}
	for _, crd := range crds {
		groups[crd.Spec.Group] = true
	}
	b.WriteString(fmt.Sprintf("Every kind Annex defines, from its CustomResourceDefinition (`config/crd/bases`, which controller-gen writes from the Go types and doc comments of `api/`). API group: %s.\n\n", codeList(sortedKeys(groups))))
	b.WriteString("Fields are written by their path from the object's root; `[]` stands for every item of a list and `<key>` for every key of a map. Every object also has the usual `apiVersion`, `kind` and `metadata`.\n\n")
	var toc [][]string
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			toc = append(toc, []string{
				fmt.Sprintf("[%s](#%s)", kindHeading(crd, v), Slug(kindHeading(crd, v))),
				Code(crd.Spec.Group + "/" + v.Name),
				string(crd.Spec.Scope),
				Cell(FirstSentence(rootDescription(v))),
			})
		}
	}
	b.WriteString(Table([]string{"Kind", "API version", "Scope", "Summary"}, toc))
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			writeKind(&b, crd, v)
		}
	}
	return b.String()
}

// kindHeading is the kind, with its version when the CRD serves several.
func kindHeading(crd apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) string {
	if len(crd.Spec.Versions) == 1 {
		return crd.Spec.Names.Kind
	}
	return crd.Spec.Names.Kind + " " + v.Name
}

func rootDescription(v apiextensionsv1.CustomResourceDefinitionVersion) string {
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return ""
	}
	return v.Schema.OpenAPIV3Schema.Description
}

func writeKind(b *strings.Builder, crd apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) {
	heading := kindHeading(crd, v)
	n := crd.Spec.Names
	fmt.Fprintf(b, "## %s\n\n", heading)
	if d := rootDescription(v); d != "" {
		b.WriteString(Prose(d))
	}
	facts := [][]string{
		{"API version", Code(crd.Spec.Group + "/" + v.Name)},
		{"Scope", string(crd.Spec.Scope)},
		{"Resource", Code(crd.Name)},
		{"Names", codeList(append([]string{n.Plural, n.Singular}, n.ShortNames...))},
	}
	if len(n.Categories) > 0 {
		facts = append(facts, []string{"Categories", codeList(n.Categories)})
	}
	var sub []string
	if v.Subresources != nil {
		if v.Subresources.Status != nil {
			sub = append(sub, "status")
		}
		if v.Subresources.Scale != nil {
			sub = append(sub, "scale")
		}
	}
	if len(sub) > 0 {
		facts = append(facts, []string{"Subresources", codeList(sub)})
	}
	var state []string
	if v.Storage {
		state = append(state, "storage version")
	}
	if !v.Served {
		state = append(state, "not served")
	}
	if v.Deprecated {
		state = append(state, "deprecated")
	}
	if len(state) > 0 && len(crd.Spec.Versions) > 1 {
		facts = append(facts, []string{"Version", strings.Join(state, ", ")})
	}
	for _, f := range facts {
		fmt.Fprintf(b, "- %s: %s\n", f[0], f[1])
	}
	b.WriteString("\n")

	if len(v.AdditionalPrinterColumns) > 0 {
		fmt.Fprintf(b, "### %s printer columns\n\n", heading)
		fmt.Fprintf(b, "What `kubectl get %s` shows; columns of priority above 0 only with `-o wide`.\n\n", n.Plural)
		var rows [][]string
		for _, c := range v.AdditionalPrinterColumns {
			shown := "always"
			if c.Priority > 0 {
				shown = "`-o wide`"
			}
			rows = append(rows, []string{Inline(c.Name), c.Type, Code(c.JSONPath), shown, Cell(c.Description)})
		}
		b.WriteString(Table([]string{"Column", "Type", "JSONPath", "Shown", "Description"}, rows))
	}

	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return
	}
	root := *v.Schema.OpenAPIV3Schema
	fmt.Fprintf(b, "### %s fields\n\n", heading)
	if rules := validations(root); len(rules) > 0 {
		b.WriteString("Rules on the whole object: " + strings.Join(rules, "; ") + "\n\n")
	}
	var rows [][]string
	for _, f := range fields("", root, map[string]bool{"apiVersion": true, "kind": true, "metadata": true}) {
		required := ""
		if f.required {
			required = "yes"
		}
		rows = append(rows, []string{Code(f.path), Inline(typeOf(f.schema)), required, defaultOf(f.schema), strings.Join(validations(f.schema), "<br>"), Cell(descriptionOf(f.schema))})
	}
	b.WriteString(Table([]string{"Field", "Type", "Required", "Default", "Validation", "Description"}, rows))
}

// field is one property of a schema, at its path from the root.
type field struct {
	path     string
	schema   apiextensionsv1.JSONSchemaProps
	required bool
}

// fields lists the properties of s and, depth first, of their objects,
// list items and map values, in the schema's (alphabetical) order;
// properties named in skip are left out at this level.
func fields(prefix string, s apiextensionsv1.JSONSchemaProps, skip map[string]bool) []field {
	var out []field
	for _, name := range sortedKeys(s.Properties) {
		if skip[name] {
			continue
		}
		p := s.Properties[name]
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		out = append(out, field{path: path, schema: p, required: slices.Contains(s.Required, name)})
		out = append(out, nested(path, p)...)
	}
	return out
}

// nested lists the fields inside p: its properties, those of its list
// items (path[]) or of its map values (path.<key>).
func nested(path string, p apiextensionsv1.JSONSchemaProps) []field {
	switch {
	case len(p.Properties) > 0:
		return fields(path, p, nil)
	case p.Items != nil && p.Items.Schema != nil:
		return nested(path+"[]", *p.Items.Schema)
	case p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil:
		return nested(path+".<key>", *p.AdditionalProperties.Schema)
	}
	return nil
}

// typeOf is a field's type as a reader knows it: []T for lists,
// map[string]T for maps, the format in parentheses.
func typeOf(s apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int or string"
	case s.XEmbeddedResource:
		return "object (a Kubernetes object)"
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return "[]" + typeOf(*s.Items.Schema)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return "map[string]" + typeOf(*s.AdditionalProperties.Schema)
	case s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields && len(s.Properties) == 0:
		if s.Type == "" {
			return "any"
		}
		return s.Type + " (free-form)"
	case s.Type == "":
		return "any"
	case s.Format != "":
		return s.Type + " (" + s.Format + ")"
	}
	return s.Type
}

// descriptionOf is the field's description, else that of its list items.
func descriptionOf(s apiextensionsv1.JSONSchemaProps) string {
	if s.Description == "" && s.Items != nil && s.Items.Schema != nil {
		return s.Items.Schema.Description
	}
	return s.Description
}

func defaultOf(s apiextensionsv1.JSONSchemaProps) string {
	if s.Default == nil {
		return ""
	}
	if string(s.Default.Raw) == `""` {
		return "`\"\"`"
	}
	return Code(enumValue(s.Default.Raw))
}

// validations are the checks the API server makes of a value at s:
// enum, bounds, pattern, list and map semantics, CEL rules.
func validations(s apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	if len(s.Enum) > 0 {
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, Code(enumValue(e.Raw)))
		}
		out = append(out, "one of "+strings.Join(vals, ", "))
	}
	if r := bounds("length", s.MinLength, s.MaxLength); r != "" {
		out = append(out, r)
	}
	if r := bounds("items", s.MinItems, s.MaxItems); r != "" {
		out = append(out, r)
	}
	if r := bounds("properties", s.MinProperties, s.MaxProperties); r != "" {
		out = append(out, r)
	}
	if s.Minimum != nil {
		op := "≥"
		if s.ExclusiveMinimum {
			op = ">"
		}
		out = append(out, fmt.Sprintf("%s %v", op, *s.Minimum))
	}
	if s.Maximum != nil {
		op := "≤"
		if s.ExclusiveMaximum {
			op = "<"
		}
		out = append(out, fmt.Sprintf("%s %v", op, *s.Maximum))
	}
	if s.MultipleOf != nil {
		out = append(out, fmt.Sprintf("multiple of %v", *s.MultipleOf))
	}
	if s.Pattern != "" {
		out = append(out, "pattern "+Code(s.Pattern))
	}
	if s.UniqueItems {
		out = append(out, "unique items")
	}
	if s.Nullable {
		out = append(out, "may be null")
	}
	if s.XListType != nil {
		l := "list type " + Code(*s.XListType)
		if len(s.XListMapKeys) > 0 {
			l += " keyed by " + codeList(s.XListMapKeys)
		}
		out = append(out, l)
	}
	if s.XMapType != nil {
		out = append(out, "map type "+Code(*s.XMapType))
	}
	for _, r := range s.XValidations {
		rule := "rule " + Code(r.Rule)
		switch {
		case r.Message != "":
			rule += ": " + Inline(r.Message)
		case r.MessageExpression != "":
			rule += ": message " + Code(r.MessageExpression)
		}
		if r.FieldPath != "" {
			rule += " (on " + Code(r.FieldPath) + ")"
		}
		out = append(out, rule)
	}
	return out
}

// bounds is "name a–b", "name ≥ a" or "name ≤ b"; "" when neither is set.
func bounds(name string, lo, hi *int64) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf("%s %d–%d", name, *lo, *hi)
	case lo != nil:
		return fmt.Sprintf("%s ≥ %d", name, *lo)
	case hi != nil:
		return fmt.Sprintf("%s ≤ %d", name, *hi)
	}
	return ""
}

// enumValue is a string enum value without its quotes, another value as
// JSON.
func enumValue(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return compactJSON(raw)
}

func compactJSON(raw []byte) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out) // sorts map keys
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(out.String(), "\n")
}

func codeList(items []string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = Code(s)
	}
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
