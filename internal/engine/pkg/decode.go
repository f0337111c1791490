package pkg

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxYAMLNodes bounds the nodes one file may decode to, aliases expanded:
// a few aliases nested ten deep would otherwise expand to billions.
const maxYAMLNodes = 100_000

// nodeDecoder decodes yaml.v3 nodes into the package types, finding fields
// by their json tags as KUDO's reader (sigs.k8s.io/yaml) does, with two
// differences: a scalar read into a string or an `any` keeps its text as
// written (`5.10` stays "5.10", where KUDO read "5.1"), and it remembers
// the line of every path and every unknown key, for errors and for Lint.
// Unknown keys are not errors: an existing KUDO package loads unchanged.
type nodeDecoder struct {
	file string
	// lines maps a path ("tasks[0].spec.resources[1]") to its line.
	lines map[string]int
	// unknown lists the keys no field takes, as warnings.
	unknown []Problem
	nodes   int
}

func newNodeDecoder(file string) *nodeDecoder {
	return &nodeDecoder{file: file, lines: map[string]int{}}
}

// fail returns a *LoadError at n's line.
func (d *nodeDecoder) fail(n *yaml.Node, format string, args ...any) error {
	return &LoadError{File: d.file, Line: n.Line, Message: fmt.Sprintf(format, args...)}
}

// resolve follows an alias and counts the node against the budget.
func (d *nodeDecoder) resolve(n *yaml.Node) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	d.nodes++
	if d.nodes > maxYAMLNodes {
		return nil, d.fail(n, "expands to more than %d YAML nodes (nested aliases?); write the values out", maxYAMLNodes)
	}
	return n, nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// decode stores n into v, which must be settable.
func (d *nodeDecoder) decode(n *yaml.Node, path string, v reflect.Value) error {
	n, err := d.resolve(n)
	if err != nil {
		return err
	}
	if _, ok := d.lines[path]; !ok {
		d.lines[path] = n.Line
	}
	if isNull(n) {
		return nil // absent: the zero value
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		if err := d.decode(n, path, elem.Elem()); err != nil {
			return err
		}
		v.Set(elem)
		return nil
	case reflect.Interface:
		val, err := d.anyValue(n, path)
		if err != nil {
			return err
		}
		if val != nil {
			v.Set(reflect.ValueOf(val))
		}
		return nil
	case reflect.Struct:
		return d.decodeStruct(n, path, v)
	case reflect.Map:
		return d.decodeMap(n, path, v)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.fail(n, "%s: must be a list (got %s)", path, describeNode(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(item, fmt.Sprintf("%s[%d]", path, i), s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return d.fail(n, "%s: must be a single value (got %s)", path, describeNode(n))
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		b, ok := parseBool(n.Value)
		if !ok {
			return d.fail(n, "%s: must be true or false (got %q)", path, n.Value)
		}
		v.SetBool(b)
	case reflect.Int:
		i, err := strconv.Atoi(n.Value)
		if err != nil {
			return d.fail(n, "%s: must be a whole number (got %q)", path, n.Value)
		}
		v.SetInt(int64(i))
	default:
		return d.fail(n, "%s: cannot be read into %s", path, v.Type())
	}
	return nil
}

func (d *nodeDecoder) decodeStruct(n *yaml.Node, path string, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return d.fail(n, "%s: must be a map of fields (got %s)", displayPath(path), describeNode(n))
	}
	fields := jsonFields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		name := key.Value
		if name == "<<" {
			return d.fail(key, "%s: merge keys (<<) are not supported; write the keys out", displayPath(path))
		}
		index, ok := fields[name]
		if !ok {
			// encoding/json, behind KUDO's reader, matches keys
			// case-insensitively.
			var exact string
			for field, i := range fields {
				if strings.EqualFold(field, name) {
					index, ok, exact = i, true, field
				}
			}
			if ok {
				d.unknown = append(d.unknown, Problem{File: d.file, Line: key.Line, Severity: SeverityWarning,
					Message: fmt.Sprintf("key %q is read as %q; write %s", joinPath(path, name), exact, exact)})
				name = exact
			}
		}
		if seen[name] {
			return d.fail(key, "%s: key %q appears twice; keep one", displayPath(path), name)
		}
		seen[name] = true
		child := joinPath(path, name)
		if !ok {
			d.unknown = append(d.unknown, Problem{File: d.file, Line: key.Line, Severity: SeverityWarning,
				Message: fmt.Sprintf("unknown key %q; KUDO and Annex ignore it: remove it or fix its spelling", child)})
			continue
		}
		d.lines[child] = key.Line
		if err := d.decode(val, child, v.Field(index)); err != nil {
			return err
		}
	}
	return nil
}

func (d *nodeDecoder) decodeMap(n *yaml.Node, path string, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return d.fail(n, "%s: must be a map (got %s)", displayPath(path), describeNode(n))
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if m.MapIndex(reflect.ValueOf(key.Value)).IsValid() {
			return d.fail(key, "%s: key %q appears twice; keep one", displayPath(path), key.Value)
		}
		child := joinPath(path, key.Value)
		d.lines[child] = key.Line
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := d.decode(val, child, elem); err != nil {
			return err
		}
		m.SetMapIndex(reflect.ValueOf(key.Value), elem)
	}
	v.Set(m)
	return nil
}

// anyValue reads a value of type any (a parameter default, an enum entry):
// a scalar keeps its text as written, a list or map becomes []any or
// map[string]any of typed values (see structuredValue).
func (d *nodeDecoder) anyValue(n *yaml.Node, path string) (any, error) {
	if n.Kind == yaml.ScalarNode {
		if isNull(n) {
			return nil, nil
		}
		return n.Value, nil
	}
	return d.structuredValue(n, path)
}

// structuredValue reads a YAML value into JSON-compatible Go values, as
// templates see them: nil, bool, int64, float64, string, []any and
// map[string]any. Timestamps and non-finite floats stay strings.
func (d *nodeDecoder) structuredValue(n *yaml.Node, path string) (any, error) {
	n, err := d.resolve(n)
	if err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			v, err := d.structuredValue(item, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			if key.Value == "<<" {
				return nil, d.fail(key, "%s: merge keys (<<) are not supported; write the keys out", displayPath(path))
			}
			if _, dup := out[key.Value]; dup {
				return nil, d.fail(key, "%s: key %q appears twice; keep one", displayPath(path), key.Value)
			}
			v, err := d.structuredValue(val, joinPath(path, key.Value))
			if err != nil {
				return nil, err
			}
			out[key.Value] = v
		}
		return out, nil
	case yaml.ScalarNode:
		return scalarValue(n), nil
	}
	return nil, d.fail(n, "%s: unexpected YAML node", displayPath(path))
}

// scalarValue resolves a scalar by its YAML 1.2 tag.
func scalarValue(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if n.Decode(&b) == nil {
			return b
		}
	case "!!int":
		var i int64
		if n.Decode(&i) == nil {
			return i
		}
		var f float64
		if n.Decode(&f) == nil {
			return f
		}
	case "!!float":
		var f float64
		if n.Decode(&f) == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	return n.Value
}

// jsonFields maps the json names of t's fields to their index.
func jsonFields(t reflect.Type) map[string]int {
	out := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = i
	}
	return out
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func displayPath(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// describeNode names what a node holds, for errors.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// parseBool accepts what strconv.ParseBool does plus YAML 1.1's yes/no/
// on/off, which KUDO's YAML 1.1 reader took as booleans.
func parseBool(s string) (bool, bool) {
	if b, err := strconv.ParseBool(s); err == nil {
		return b, true
	}
	switch strings.ToLower(s) {
	case "yes", "y", "on":
		return true, true
	case "no", "n", "off":
		return false, true
	}
	return false, false
}
