package console

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// The install form is generated from a version's values schema: one
// input per leaf property (nested objects are walked, their fields named
// by dotted paths), plus a YAML box for anything the inputs do not cover.
// A field left empty is not set, so the chart's default applies.

// Field is one input of the install form.
type Field struct {
	// Path is the property's dotted path in the values, e.g.
	// "resources.limits.cpu"; the input is named "values." + Path.
	Path string
	// Input is text, integer, number, boolean (a choice of default, true
	// and false), enum (a choice of the schema's values) or yaml (a text
	// box for arrays, free-form objects and properties of several types).
	Input string
	// Help is the schema's title and description.
	Help string
	// Required is set when the schema requires the property (the chart's
	// default may provide it).
	Required bool
	// Options are the values of an enum.
	Options []string
	// Default is the chart's values.yaml value (what Helm installs),
	// else the schema's default, shown as a placeholder.
	Default string
	// Min, Max bound a number; MinLength, MaxLength a string; Pattern is
	// the string's regular expression. The browser checks them before
	// sending; the API server and Annex check the values again.
	Min, Max             *float64
	MinLength, MaxLength *int
	Pattern              string
	// Value is what was entered, when the form is shown again after an
	// error; Error says what is wrong with it.
	Value, Error string

	enum []any // the schema's enum values, in the order of Options
}

// ID is the HTML id of the field's input.
func (f Field) ID() string { return "value-" + strings.ReplaceAll(f.Path, ".", "-") }

// Name is the form name of the field's input.
func (f Field) Name() string { return "values." + f.Path }

// schemaNode is the part of a JSON schema the form understands.
type schemaNode struct {
	Type        any                    `json:"type"`
	Title       string                 `json:"title"`
	Description string                 `json:"description"`
	Properties  map[string]*schemaNode `json:"properties"`
	Required    []string               `json:"required"`
	Enum        []any                  `json:"enum"`
	Default     any                    `json:"default"`
	Minimum     *float64               `json:"minimum"`
	Maximum     *float64               `json:"maximum"`
	MinLength   *int                   `json:"minLength"`
	MaxLength   *int                   `json:"maxLength"`
	Pattern     string                 `json:"pattern"`
}

// maxFormDepth bounds how deep nested objects are walked; deeper ones
// become a YAML box.
const maxFormDepth = 4

// FormFields returns the inputs for a values schema (raw JSON), in a
// stable order: required properties first, then by path. Each field's
// placeholder is the value of the chart's values.yaml (defaults, as JSON;
// nil when not known), else the schema's default. No schema, or one
// without properties, gives no inputs (the YAML box remains). The error
// says what is wrong with the schema.
func FormFields(schema, defaults []byte) ([]Field, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	root := &schemaNode{}
	if err := json.Unmarshal(schema, root); err != nil {
		return nil, fmt.Errorf("the values schema is not a JSON schema object: %w", err)
	}
	var values map[string]any
	_ = json.Unmarshal(defaults, &values) // values.yaml that is not a mapping sets no placeholder
	var out []Field
	walkSchema(root, values, "", 0, &out)
	slices.SortStableFunc(out, func(a, b Field) int {
		if a.Required != b.Required {
			if a.Required {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}

// walkSchema adds the fields of n's properties; values is the part of
// values.yaml at n's path.
func walkSchema(n *schemaNode, values map[string]any, prefix string, depth int, out *[]Field) {
	for name, p := range n.Properties {
		if p == nil {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		required := slices.Contains(n.Required, name)
		value, hasValue := values[name]
		if len(p.Properties) > 0 && depth+1 < maxFormDepth && typeOf(p) == "object" {
			nested, _ := value.(map[string]any)
			walkSchema(p, nested, path, depth+1, out)
			continue
		}
		f := fieldOf(path, p, required)
		if hasValue && value != nil {
			f.Default = scalarText(value) // what Helm installs wins over the schema's default
		}
		*out = append(*out, f)
	}
}

func fieldOf(path string, p *schemaNode, required bool) Field {
	f := Field{
		Path: path, Required: required, Help: strings.TrimSpace(p.Title + " " + p.Description),
		Min: p.Minimum, Max: p.Maximum, MinLength: p.MinLength, MaxLength: p.MaxLength, Pattern: p.Pattern,
	}
	if p.Default != nil {
		f.Default = scalarText(p.Default)
	}
	switch t := typeOf(p); {
	case len(p.Enum) > 0:
		f.Input, f.enum = "enum", p.Enum
		for _, v := range p.Enum {
			f.Options = append(f.Options, scalarText(v))
		}
	case t == "string":
		f.Input = "text"
	case t == "integer", t == "number", t == "boolean":
		f.Input = t
	default:
		f.Input = "yaml"
	}
	return f
}

// typeOf is the schema's single type, or "" when it has several or none.
func typeOf(p *schemaNode) string {
	switch t := p.Type.(type) {
	case string:
		return t
	case []any:
		var types []string
		for _, x := range t {
			if s, ok := x.(string); ok && s != "null" {
				types = append(types, s)
			}
		}
		if len(types) == 1 {
			return types[0]
		}
	}
	if len(p.Properties) > 0 {
		return "object"
	}
	return ""
}

// scalarText prints a schema value for a placeholder or an option: a
// string as is, anything else as JSON.
func scalarText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// ValuesFromForm builds the values from a submitted form: the YAML box
// ("values", a mapping) first, then every non-empty field at its path.
// It returns the fields with what was entered, and with an error on each
// that cannot be read; values is nil when any field has an error or
// yamlErr is set.
func ValuesFromForm(fields []Field, form url.Values) (values map[string]any, filled []Field, yamlErr string) {
	values = map[string]any{}
	if text := strings.TrimSpace(form.Get("values")); text != "" {
		if err := yaml.Unmarshal([]byte(text), &values); err != nil {
			yamlErr = fmt.Sprintf("other values: not a YAML mapping: %v", err)
		}
		if values == nil {
			values = map[string]any{}
		}
	}
	filled = make([]Field, len(fields))
	failed := yamlErr != ""
	for i, f := range fields {
		f.Value = strings.TrimSpace(form.Get(f.Name()))
		if f.Value != "" {
			v, err := parseInput(f)
			if err != nil {
				f.Error = fmt.Sprintf("values.%s: %v", f.Path, err)
				failed = true
			} else {
				setPath(values, strings.Split(f.Path, "."), v)
			}
		}
		filled[i] = f
	}
	if failed {
		return nil, filled, yamlErr
	}
	return values, filled, ""
}

func parseInput(f Field) (any, error) {
	switch f.Input {
	case "integer":
		n, err := strconv.ParseInt(f.Value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", f.Value)
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(f.Value, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f.Value)
		}
		return n, nil
	case "boolean":
		b, err := strconv.ParseBool(f.Value)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", f.Value)
		}
		return b, nil
	case "enum":
		i := slices.Index(f.Options, f.Value)
		if i < 0 {
			return nil, fmt.Errorf("%q is not one of %s", f.Value, strings.Join(f.Options, ", "))
		}
		return f.enum[i], nil
	case "yaml":
		var v any
		if err := yaml.Unmarshal([]byte(f.Value), &v); err != nil {
			return nil, fmt.Errorf("not YAML: %v", err)
		}
		return v, nil
	}
	return f.Value, nil
}

// setPath sets values[path...] = v, creating (or replacing non-mapping)
// intermediate mappings.
func setPath(values map[string]any, path []string, v any) {
	for _, key := range path[:len(path)-1] {
		next, ok := values[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			values[key] = next
		}
		values = next
	}
	values[path[len(path)-1]] = v
}
