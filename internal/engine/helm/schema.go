package helm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// schemaURL is the base URL a chart's schema is compiled under. Relative
// $refs resolve against it and are then refused by refusingLoader.
const schemaURL = "file:///values.schema.json"

// errSchemaRef is returned by refusingLoader for every URL it is asked for.
var errSchemaRef = errors.New("references outside values.schema.json are not allowed")

// refusingLoader keeps schema compilation free of I/O: an untrusted chart must
// not make Annex read local files or reach the network through a $ref.
type refusingLoader struct{}

func (refusingLoader) Load(string) (any, error) { return nil, errSchemaRef }

// validateValues checks values against ch's values.schema.json and, as Helm
// does, each subchart's schema against the subchart's section of values. It
// returns the violations sorted by path, or an error (for the ArchiveError)
// when a schema cannot be compiled.
func validateValues(ch *chart.Chart, values map[string]any, at []string) ([]Violation, error) {
	var out []Violation
	if len(ch.Schema) > 0 {
		vs, err := validateAgainst(ch.Schema, values, at)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path.Join(ch.ChartFullPath(), "values.schema.json"), err)
		}
		out = append(out, vs...)
	}
	for _, sub := range ch.Dependencies() {
		raw, ok := values[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subAt := append(append([]string(nil), at...), sub.Name())
		subValues, ok := raw.(map[string]any)
		if !ok {
			out = append(out, Violation{Path: valuesPath(subAt), Message: fmt.Sprintf("must be a map of values for subchart %q (got %s)", sub.Name(), display(raw))})
			continue
		}
		vs, err := validateValues(sub, subValues, subAt)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Message < out[j].Message
	})
	return out, nil
}

// validateAgainst compiles one schema document and validates values with it.
func validateAgainst(schemaJSON []byte, values map[string]any, at []string) (vs []Violation, err error) {
	// The validator is third-party code fed with untrusted input; a panic in it
	// must become an error about the schema, not take the manager down.
	defer func() {
		if r := recover(); r != nil {
			vs, err = nil, fmt.Errorf("cannot validate against the schema: %v", r)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("not a valid JSON schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		if le, ok := errors.AsType[*jsonschema.LoadURLError](err); ok {
			return nil, fmt.Errorf("$ref %q cannot be used: %w; inline the referenced schema into values.schema.json", le.URL, errSchemaRef)
		}
		return nil, fmt.Errorf("not a valid JSON schema: %w", err)
	}
	verr := sch.Validate(any(values))
	if verr == nil {
		return nil, nil
	}
	ve, ok := errors.AsType[*jsonschema.ValidationError](verr)
	if !ok {
		return nil, fmt.Errorf("cannot validate against the schema: %w", verr)
	}
	collectViolations(ve, values, at, &vs)
	return vs, nil
}

// collectViolations flattens the validator's error tree into one violation per
// failed leaf keyword. anyOf/oneOf are reported once, at their own location:
// listing why each alternative failed rarely helps a user pick the right one.
func collectViolations(ve *jsonschema.ValidationError, root any, at []string, out *[]Violation) {
	switch ve.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
	default:
		if len(ve.Causes) > 0 {
			for _, c := range ve.Causes {
				collectViolations(c, root, at, out)
			}
			return
		}
	}
	loc := append(append([]string(nil), at...), ve.InstanceLocation...)
	got := display(lookupInstance(root, ve.InstanceLocation))
	add := func(loc []string, msg string) {
		*out = append(*out, Violation{Path: valuesPathIn(root, at, loc), Message: msg})
	}
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			add(append(loc, m), "is required")
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			add(append(loc, p), "is not allowed by the schema")
		}
	case *kind.FalseSchema:
		add(loc, "is not allowed by the schema")
	case *kind.Type:
		add(loc, fmt.Sprintf("must be of type %s (got %s)", strings.Join(k.Want, " or "), got))
	case *kind.Minimum:
		add(loc, fmt.Sprintf("must be >= %s (got %s)", ratString(k.Want), got))
	case *kind.Maximum:
		add(loc, fmt.Sprintf("must be <= %s (got %s)", ratString(k.Want), got))
	case *kind.ExclusiveMinimum:
		add(loc, fmt.Sprintf("must be > %s (got %s)", ratString(k.Want), got))
	case *kind.ExclusiveMaximum:
		add(loc, fmt.Sprintf("must be < %s (got %s)", ratString(k.Want), got))
	case *kind.MultipleOf:
		add(loc, fmt.Sprintf("must be a multiple of %s (got %s)", ratString(k.Want), got))
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = display(w)
		}
		add(loc, fmt.Sprintf("must be one of %s (got %s)", strings.Join(want, ", "), got))
	case *kind.Const:
		add(loc, fmt.Sprintf("must be %s (got %s)", display(k.Want), got))
	case *kind.Pattern:
		add(loc, fmt.Sprintf("must match pattern %q (got %s)", k.Want, got))
	case *kind.Format:
		add(loc, fmt.Sprintf("must be a valid %s (got %s)", k.Want, got))
	case *kind.MinLength:
		add(loc, fmt.Sprintf("must be at least %d characters long (got %s)", k.Want, got))
	case *kind.MaxLength:
		add(loc, fmt.Sprintf("must be at most %d characters long (got %s)", k.Want, got))
	case *kind.MinItems:
		add(loc, fmt.Sprintf("must have at least %d items (got %d)", k.Want, k.Got))
	case *kind.MaxItems:
		add(loc, fmt.Sprintf("must have at most %d items (got %d)", k.Want, k.Got))
	case *kind.MinProperties:
		add(loc, fmt.Sprintf("must have at least %d keys (got %d)", k.Want, k.Got))
	case *kind.MaxProperties:
		add(loc, fmt.Sprintf("must have at most %d keys (got %d)", k.Want, k.Got))
	case *kind.UniqueItems:
		add(loc, fmt.Sprintf("must not contain duplicates (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1]))
	case *kind.AnyOf:
		add(loc, fmt.Sprintf("must match at least one of the schemas in anyOf (got %s)", got))
	case *kind.OneOf:
		if len(k.Subschemas) < 2 {
			add(loc, fmt.Sprintf("must match exactly one of the schemas in oneOf, but matches none (got %s)", got))
		} else {
			add(loc, fmt.Sprintf("must match exactly one of the schemas in oneOf, but matches %d and %d (got %s)", k.Subschemas[0], k.Subschemas[1], got))
		}
	case *kind.Not:
		add(loc, fmt.Sprintf("must not match the schema in not (got %s)", got))
	default:
		add(loc, fmt.Sprintf("%s (got %s)", ve.ErrorKind.LocalizedString(message.NewPrinter(language.English)), got))
	}
}

// lookupInstance returns the value at a JSON-pointer-like token path, or nil.
func lookupInstance(root any, tokens []string) any {
	cur := root
	for _, t := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// valuesPathIn renders loc (whose first len(at) tokens are the subchart
// prefix, the rest relative to root) as "values.a.b[0].c".
func valuesPathIn(root any, at, loc []string) string {
	var b strings.Builder
	b.WriteString("values")
	for _, t := range at {
		b.WriteString("." + strings.ReplaceAll(t, ".", `\.`))
	}
	cur := root
	for _, t := range loc[len(at):] {
		if list, ok := cur.([]any); ok {
			b.WriteString("[" + t + "]")
			if i, err := strconv.Atoi(t); err == nil && i >= 0 && i < len(list) {
				cur = list[i]
			} else {
				cur = nil
			}
			continue
		}
		b.WriteString("." + strings.ReplaceAll(t, ".", `\.`))
		if m, ok := cur.(map[string]any); ok {
			cur = m[t]
		} else {
			cur = nil
		}
	}
	return b.String()
}

// valuesPath renders a path of map keys only.
func valuesPath(keys []string) string { return valuesPathIn(nil, keys, keys) }

// display renders a value compactly as JSON for a message, shortening long
// values so that one violation stays one readable line.
func display(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := strings.TrimSuffix(buf.String(), "\n")
	const maxRunes = 64
	if r := []rune(s); len(r) > maxRunes {
		return string(r[:maxRunes]) + "..."
	}
	return s
}

// ratString prints a schema bound the way it was most likely written.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}
