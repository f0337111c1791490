package pkg

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ParamError reports a parameter value the package does not accept. It
// is terminal: the user must change spec.values (or, for Field "default"
// and "type", the package must change). Resolve checks everything before
// anything is applied.
type ParamError struct {
	// Param is the parameter's name.
	Param string
	// Field is the rule broken: "name" (no such parameter), "required",
	// "type", "enum", "immutable", or "default" (the package's default is
	// itself invalid).
	Field string
	// Message says what is wrong and how to fix it.
	Message string
}

// Error reads like
//
//	parameter REPLICAS: must be an integer (got "three"); set spec.values.REPLICAS to a whole number
func (e *ParamError) Error() string { return "parameter " + e.Param + ": " + e.Message }

// Permanent marks the error as final: the same values fail again.
func (e *ParamError) Permanent() bool { return true }

// Resolve returns the effective parameters of p: for each parameter of
// params.yaml, the value in values (an installation's spec.values, JSON-
// decoded), else its default, in KUDO's representation so that existing
// templates render unchanged:
//
//   - string, integer, number, boolean: a string ("3", "2.5", "true"),
//     so `{{ sub (atoi .Params.N) 1 }}` works; integers are written
//     without a fraction, booleans as "true" or "false";
//   - array: []any; map: map[string]any, whether given structured or as
//     YAML text; inside them numbers are int64 when whole, else float64;
//   - a parameter neither given nor defaulted is "" (or an empty list or
//     map), so every parameter exists for missingkey=error templates.
//
// installed is nil on install, else the effective parameters of the
// installed revision. An immutable parameter keeps its installed value
// when values leaves it out (KUDO pins it in the Instance at install);
// given a different value it is an error. A parameter installed lacks
// (added by an upgrade) takes its default and is no violation (KUDO
// #1776).
//
// Every problem is reported: the error is a *ParamError, or several
// joined with errors.Join (errors.As finds the first). Unknown names in
// values come first, then the package's parameters in params.yaml order.
func Resolve(p *Package, values, installed map[string]any) (map[string]any, error) {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if values[name] != nil && p.param(name) == nil {
			errs = append(errs, unknownParam(p, name))
		}
	}
	out := make(map[string]any, len(p.Params.Parameters))
	for _, prm := range p.Params.Parameters {
		v, err := resolveParam(prm, values, installed)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[prm.Name] = v
	}
	if len(errs) > 0 {
		if len(errs) == 1 {
			return nil, errs[0]
		}
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func resolveParam(prm Param, values, installed map[string]any) (any, error) {
	typ := prm.paramType()
	if !validType(typ) {
		return nil, &ParamError{Param: prm.Name, Field: "type", Message: fmt.Sprintf(
			"has type %q, which is not a parameter type; the package's params.yaml must use string, integer, number, boolean, array or map", typ)}
	}
	given, isGiven := values[prm.Name]
	isGiven = isGiven && given != nil
	previous, wasInstalled := installed[prm.Name]

	var value any
	switch {
	case isGiven:
		v, err := convertValue(typ, given)
		if err != nil {
			return nil, &ParamError{Param: prm.Name, Field: "type", Message: fmt.Sprintf("%v; set spec.values.%s to %s", err, prm.Name, typeHint(typ))}
		}
		value = v
	case prm.isImmutable() && wasInstalled:
		return normalizeStructured(previous), nil
	case prm.Default != nil:
		v, err := convertValue(typ, prm.Default)
		if err != nil {
			return nil, &ParamError{Param: prm.Name, Field: "default", Message: fmt.Sprintf(
				"the package's default is invalid (%v); set spec.values.%s to %s, and report it to the package's maintainers", err, prm.Name, typeHint(typ))}
		}
		value = v
	case prm.isRequired():
		return nil, &ParamError{Param: prm.Name, Field: "required", Message: fmt.Sprintf(
			"is required and has no default; set spec.values.%s", prm.Name)}
	default:
		return emptyValue(typ), nil
	}

	if len(prm.Enum) > 0 && !inEnum(typ, prm.Enum, value) {
		field, fix := "enum", fmt.Sprintf("set spec.values.%s to one of them", prm.Name)
		if !isGiven {
			field, fix = "default", fmt.Sprintf("set spec.values.%s to one of them, and report the default to the package's maintainers", prm.Name)
		}
		return nil, &ParamError{Param: prm.Name, Field: field, Message: fmt.Sprintf(
			"must be one of %s (got %s); %s", enumList(prm.Enum), describeValue(value), fix)}
	}
	if prm.isImmutable() && wasInstalled && !equalValues(value, previous) {
		return nil, &ParamError{Param: prm.Name, Field: "immutable", Message: fmt.Sprintf(
			"is immutable and cannot change after install (installed %s, requested %s); set spec.values.%s back to %s",
			describeValue(previous), describeValue(value), prm.Name, describeValue(previous))}
	}
	return value, nil
}

// Changed returns the names of the parameters whose effective value
// differs between before and after (both Resolve results; before nil on
// install), including parameters added or removed, in params.yaml order
// of p, then names p does not declare, sorted. A parameter only added by
// an upgrade with its default value does not count (KUDO PR #1780): it
// did not change, it appeared.
func Changed(p *Package, before, after map[string]any) []string {
	var changed []string
	declared := map[string]bool{}
	for _, prm := range p.Params.Parameters {
		declared[prm.Name] = true
		o, inOld := before[prm.Name]
		n, inNew := after[prm.Name]
		switch {
		case inOld && inNew:
			if !equalValues(o, n) {
				changed = append(changed, prm.Name)
			}
		case inNew:
			if !equalValues(n, prm.defaultValue()) {
				changed = append(changed, prm.Name)
			}
		case inOld:
			changed = append(changed, prm.Name)
		}
	}
	var others []string
	for name := range before {
		if !declared[name] {
			others = append(others, name)
		}
	}
	for name := range after {
		if _, inOld := before[name]; !declared[name] && !inOld {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	return append(changed, others...)
}

// param returns the parameter named name, nil when there is none.
func (p *Package) param(name string) *Param {
	for i := range p.Params.Parameters {
		if p.Params.Parameters[i].Name == name {
			return &p.Params.Parameters[i]
		}
	}
	return nil
}

func (prm Param) paramType() ParamType {
	if prm.Type == "" {
		return TypeString
	}
	return prm.Type
}

// isRequired: absent means true, as in KUDO.
func (prm Param) isRequired() bool { return prm.Required == nil || *prm.Required }

func (prm Param) isImmutable() bool { return prm.Immutable != nil && *prm.Immutable }

// defaultValue is the effective value of the parameter when not given,
// nil when its default is invalid.
func (prm Param) defaultValue() any {
	if prm.Default == nil {
		return emptyValue(prm.paramType())
	}
	v, err := convertValue(prm.paramType(), prm.Default)
	if err != nil {
		return nil
	}
	return v
}

func validType(t ParamType) bool {
	switch t {
	case TypeString, TypeInteger, TypeNumber, TypeBoolean, TypeArray, TypeMap:
		return true
	}
	return false
}

func emptyValue(t ParamType) any {
	switch t {
	case TypeArray:
		return []any{}
	case TypeMap:
		return map[string]any{}
	}
	return ""
}

func typeHint(t ParamType) string {
	switch t {
	case TypeInteger:
		return "a whole number"
	case TypeNumber:
		return "a number"
	case TypeBoolean:
		return "true or false"
	case TypeArray:
		return "a list"
	case TypeMap:
		return "a map"
	}
	return "a text value"
}

// convertValue checks v against t and returns its representation (see
// Resolve). v is a JSON-decoded value, or a default as the reader keeps
// it (scalars as written, lists and maps structured).
func convertValue(t ParamType, v any) (any, error) {
	switch t {
	case TypeArray, TypeMap:
		return convertStructured(t, v)
	}
	text, isText := v.(string)
	switch t {
	case TypeInteger:
		if isText {
			text = strings.TrimSpace(text)
			if _, err := strconv.ParseInt(text, 10, 64); err == nil {
				return text, nil
			}
			if f, err := strconv.ParseFloat(text, 64); err == nil && isWhole(f) {
				return strconv.FormatInt(int64(f), 10), nil
			}
		} else if f, ok := number(v); ok && isWhole(f) {
			return strconv.FormatInt(int64(f), 10), nil
		} else if i, ok := v.(int64); ok {
			return strconv.FormatInt(i, 10), nil
		}
		return nil, fmt.Errorf("must be an integer (got %s)", describeValue(v))
	case TypeNumber:
		if isText {
			text = strings.TrimSpace(text)
			if f, err := strconv.ParseFloat(text, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return text, nil
			}
		} else if f, ok := number(v); ok {
			return strconv.FormatFloat(f, 'f', -1, 64), nil
		}
		return nil, fmt.Errorf("must be a number (got %s)", describeValue(v))
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			return strconv.FormatBool(b), nil
		}
		if isText {
			if b, ok := parseBool(strings.TrimSpace(text)); ok {
				return strconv.FormatBool(b), nil
			}
		}
		return nil, fmt.Errorf("must be a boolean (got %s)", describeValue(v))
	}
	// string
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	}
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	}
	return nil, fmt.Errorf("must be text (got %s)", describeValue(v))
}

// convertStructured accepts a list or map given structured or as YAML
// (or JSON) text.
func convertStructured(t ParamType, v any) (any, error) {
	if text, ok := v.(string); ok {
		parsed, err := parseYAMLValue(text)
		if err != nil {
			return nil, fmt.Errorf("must be %s, and the text does not parse as YAML (%v)", typeHint(t), err)
		}
		if parsed == nil {
			return emptyValue(t), nil
		}
		v = parsed
	}
	v = normalizeStructured(v)
	switch v.(type) {
	case []any:
		if t == TypeArray {
			return v, nil
		}
	case map[string]any:
		if t == TypeMap {
			return v, nil
		}
	}
	return nil, fmt.Errorf("must be %s (got %s)", typeHint(t), describeValue(v))
}

func parseYAMLValue(text string) (any, error) {
	root, err := parseRoot("value", []byte(text))
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			return nil, errors.New(strings.TrimSuffix(strings.TrimPrefix(le.Message, "is not valid YAML: "), "; fix the syntax"))
		}
		return nil, err
	}
	if root == nil {
		return nil, nil
	}
	return newNodeDecoder("value").structuredValue(root, "")
}

// normalizeStructured copies a JSON-decoded value with whole numbers as
// int64 (JSON gives float64, and text/template prints 1e+06 for a
// float64 million).
func normalizeStructured(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = normalizeStructured(item)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, item := range v {
			out[k] = normalizeStructured(item)
		}
		return out
	case int:
		return int64(v)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		if f, err := v.Float64(); err == nil {
			return f
		}
		return v.String()
	case float64:
		if isWhole(v) {
			return int64(v)
		}
	}
	return v
}

// number reads a JSON-decoded number.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

func isWhole(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) < 1<<63
}

// inEnum compares representations, so enum [1, 2] admits 1, "1" and 1.0.
func inEnum(t ParamType, enum []any, v any) bool {
	for _, e := range enum {
		if ev, err := convertValue(t, e); err == nil && equalValues(ev, v) {
			return true
		}
	}
	return false
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = describeValue(e)
	}
	return strings.Join(parts, ", ")
}

// equalValues compares values by their JSON form, so that an installed
// value that went through JSON (float64) equals a fresh one (int64).
func equalValues(a, b any) bool {
	ja, errA := json.Marshal(normalizeStructured(a))
	jb, errB := json.Marshal(normalizeStructured(b))
	return errA == nil && errB == nil && string(ja) == string(jb)
}

// describeValue shows a value in a message: text quoted, numbers and
// booleans plain, lists and maps as short JSON.
func describeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case []any, map[string]any:
		data, err := json.Marshal(v)
		if err != nil || len(data) > 60 {
			if _, isList := v.([]any); isList {
				return "a list"
			}
			return "a map"
		}
		return string(data)
	}
	if f, ok := number(v); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// unknownParam names close matches, or the parameters there are.
func unknownParam(p *Package, name string) error {
	type match struct {
		name string
		dist int
	}
	var matches []match
	for _, prm := range p.Params.Parameters {
		d := editDistance(strings.ToUpper(name), strings.ToUpper(prm.Name))
		if d <= 2 || (len(name) >= 3 && strings.Contains(strings.ToUpper(prm.Name), strings.ToUpper(name))) {
			matches = append(matches, match{prm.Name, d})
		}
	}
	slices.SortStableFunc(matches, func(a, b match) int { return cmp.Compare(a.dist, b.dist) })
	msg := fmt.Sprintf("is not a parameter of %s %s", p.Operator.Name, p.Operator.OperatorVersion)
	switch {
	case len(matches) > 0:
		names := make([]string, 0, 3)
		for _, m := range matches[:min(3, len(matches))] {
			names = append(names, m.name)
		}
		msg += fmt.Sprintf("; did you mean %s? Fix the name in spec.values or remove it", strings.Join(names, " or "))
	case len(p.Params.Parameters) == 0:
		msg += "; the package has no parameters: remove it from spec.values"
	case len(p.Params.Parameters) <= 10:
		names := make([]string, len(p.Params.Parameters))
		for i, prm := range p.Params.Parameters {
			names[i] = prm.Name
		}
		msg += fmt.Sprintf("; remove it from spec.values (the parameters are %s)", strings.Join(names, ", "))
	default:
		msg += "; remove it from spec.values (see the package's params.yaml for its parameters)"
	}
	return &ParamError{Param: name, Field: "name", Message: msg}
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
