// Package crdcheck compares an installed CustomResourceDefinition with the one
// an upgrade would apply and names every change that can break the objects
// stored at it or the clients that use it: a pure core (values in, findings
// out), so every engine's apply step can call it and `annexctl preflight` can
// show the same findings before anything is applied.
//
// What is compared: the scope; the versions (stored, served); and, for each
// version present in both CRDs, the openAPIV3Schema, walked through
// properties, items, additionalProperties and the allOf/anyOf/oneOf branches.
// At each schema node: type (and x-kubernetes-int-or-string), enum, minimum,
// maximum, exclusiveMinimum/Maximum, multipleOf, minLength/maxLength,
// minItems/maxItems, minProperties/maxProperties, pattern, default, nullable,
// x-kubernetes-preserve-unknown-fields, required, x-kubernetes-validations
// rules.
//
// What is not compared (a change there yields no finding): names (kind,
// plural, short names, categories), conversion, subresources, printer
// columns, selectable fields, deprecation; in schemas: format, not,
// patternProperties, dependencies, definitions, $ref, tuple items,
// uniqueItems, x-kubernetes-list-type, x-kubernetes-list-map-keys,
// x-kubernetes-map-type, x-kubernetes-embedded-resource, descriptions and
// examples. A version whose schema is missing in either CRD is not walked.
package crdcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Class names one kind of CRD change.
type Class string

// The classes Compare reports.
const (
	// StoredVersionRemoved: a version listed in the installed CRD's
	// status.storedVersions is missing from the proposed spec.versions; the
	// API server refuses such an update, and objects stored at it could not be
	// read.
	StoredVersionRemoved Class = "StoredVersionRemoved"
	// ServedVersionRemoved: a served version is removed or set to served: false;
	// clients that use it get 404.
	ServedVersionRemoved Class = "ServedVersionRemoved"
	// ScopeChanged: Namespaced ↔ Cluster.
	ScopeChanged Class = "ScopeChanged"
	// FieldRemoved: a property is gone; the API server prunes it from stored
	// objects on their next write.
	FieldRemoved Class = "FieldRemoved"
	// RequiredAdded: a property became required.
	RequiredAdded Class = "RequiredAdded"
	// TypeChanged: a type changed other than integer → number, or a type was
	// set where any was accepted.
	TypeChanged Class = "TypeChanged"
	// EnumNarrowed: enum values removed, or an enum added.
	EnumNarrowed Class = "EnumNarrowed"
	// BoundTightened: minimum, maximum, exclusiveMinimum/Maximum, multipleOf,
	// minLength/maxLength, minItems/maxItems or minProperties/maxProperties
	// made stricter.
	BoundTightened Class = "BoundTightened"
	// PatternChanged: a pattern added or changed (Annex cannot prove that a
	// changed pattern accepts every value the old one did).
	PatternChanged Class = "PatternChanged"
	// DefaultChanged: a default added, removed or changed. Objects that omit
	// the field (stored ones lacking it too, since defaults apply when objects
	// are read) get another value; nothing is refused, hence a Warning.
	DefaultChanged Class = "DefaultChanged"
	// NullableRemoved: nullable: true → false.
	NullableRemoved Class = "NullableRemoved"
	// PreserveUnknownFieldsRemoved: x-kubernetes-preserve-unknown-fields: true
	// removed; fields the schema does not list are pruned on the next write.
	PreserveUnknownFieldsRemoved Class = "PreserveUnknownFieldsRemoved"
	// AdditionalPropertiesNarrowed: a map that accepted entries accepts none,
	// or its values, which could be anything, now have a schema.
	AdditionalPropertiesNarrowed Class = "AdditionalPropertiesNarrowed"
	// ValidationRuleAdded: an x-kubernetes-validations rule that the installed
	// schema does not have.
	ValidationRuleAdded Class = "ValidationRuleAdded"
	// CombinatorChanged: allOf branches added, or anyOf/oneOf branches changed
	// in number, which Annex does not compare branch by branch.
	CombinatorChanged Class = "CombinatorChanged"
)

// Severity says whether a finding can break stored objects or clients.
type Severity string

const (
	// Breaking: an object or request valid before may be refused, lose data,
	// or not be reachable any more.
	Breaking Severity = "Breaking"
	// Warning: nothing valid is refused, but what clients read changes.
	Warning Severity = "Warning"
)

// Finding is one change between the installed and the proposed CRD.
type Finding struct {
	Class    Class
	Severity Severity
	// CRD is the CRD's name, e.g. widgets.example.com.
	CRD string
	// Version is the API version the finding is about; empty for ScopeChanged.
	Version string
	// Path is the field in the custom objects, JSONPath-like: `.spec.replicas`,
	// `.spec.ports[*].name` for array items, `.spec.labels.*` for map values,
	// `.` for the root. Empty for version and scope findings.
	Path string
	// Message says what changed, what it breaks and what to do; it names the
	// CRD, the version and the field.
	Message string
}

func (f Finding) String() string { return f.Message }

// Compare returns what changes from installed to proposed, in a stable order:
// the scope, then stored and served versions, then for each version in the
// installed CRD's order the schema depth-first with property names sorted.
// It returns nil when nothing in the compared set changed or when either
// CRD is nil (a first install, or a CRD the upgrade no longer ships). A
// version only in proposed, widened bounds, added optional fields and removed
// constraints yield nothing. Compare reads its arguments and never changes
// them; the findings name proposed's CRD name.
func Compare(installed, proposed *apiextensionsv1.CustomResourceDefinition) []Finding {
	if installed == nil || proposed == nil {
		return nil
	}
	c := &comparison{crd: proposed.Name}
	if installed.Spec.Scope != proposed.Spec.Scope {
		c.add(ScopeChanged, Breaking, "", "scope changes from %s to %s; the API server refuses that change (spec.scope is immutable); keep scope %s, or ship the %s API as a new CRD (another group or kind) and move the objects to it",
			installed.Spec.Scope, proposed.Spec.Scope, installed.Spec.Scope, proposed.Spec.Scope)
	}
	proposedVersions := make(map[string]*apiextensionsv1.CustomResourceDefinitionVersion, len(proposed.Spec.Versions))
	for i := range proposed.Spec.Versions {
		proposedVersions[proposed.Spec.Versions[i].Name] = &proposed.Spec.Versions[i]
	}
	for _, stored := range installed.Status.StoredVersions {
		if _, ok := proposedVersions[stored]; !ok {
			c.version = stored
			c.add(StoredVersionRemoved, Breaking, "", "removed, but objects are still stored at it (status.storedVersions); keep %s in spec.versions (served: false is enough) until the stored objects are rewritten at the storage version and %s is trimmed from status.storedVersions",
				stored, stored)
		}
	}
	for i := range installed.Spec.Versions {
		old := &installed.Spec.Versions[i]
		c.version = old.Name
		next, ok := proposedVersions[old.Name]
		switch {
		case !ok && old.Served:
			c.add(ServedVersionRemoved, Breaking, "", "removed while served; clients that read or write %s get 404; keep it served until no client uses it, then remove it in a later upgrade", old.Name)
		case ok && old.Served && !next.Served:
			c.add(ServedVersionRemoved, Breaking, "", "no longer served (served: true → false); clients that read or write %s get 404; keep it served until no client uses it", old.Name)
		}
		if ok && old.Schema != nil && next.Schema != nil && old.Schema.OpenAPIV3Schema != nil && next.Schema.OpenAPIV3Schema != nil {
			c.schema(".", *old.Schema.OpenAPIV3Schema, *next.Schema.OpenAPIV3Schema, false)
		}
	}
	return c.findings
}

// comparison collects the findings of one Compare call.
type comparison struct {
	crd      string
	version  string
	findings []Finding
}

// add records a finding; format and args make the part of the message after
// the CRD, version and field.
func (c *comparison) add(class Class, severity Severity, path, format string, args ...any) {
	var where strings.Builder
	fmt.Fprintf(&where, "CRD %s", c.crd)
	if c.version != "" {
		fmt.Fprintf(&where, " version %s", c.version)
	}
	if path != "" {
		fmt.Fprintf(&where, " field %s", path)
	}
	c.findings = append(c.findings, Finding{
		Class:    class,
		Severity: severity,
		CRD:      c.crd,
		Version:  c.version,
		Path:     path,
		Message:  where.String() + ": " + fmt.Sprintf(format, args...),
	})
}

// schema compares one node and everything below it. path is "." for the root.
// branch is true inside allOf/anyOf/oneOf, where a schema only validates: it
// neither prunes nor defaults, so removed properties and preserve-unknown
// changes there break nothing. The nodes come by value: the recursion copies
// map values anyway, and values on the stack cost no allocation, where the
// address of a copy passed down a recursion escapes to the heap.
func (c *comparison) schema(path string, oldNode, nextNode apiextensionsv1.JSONSchemaProps, branch bool) {
	old, next := &oldNode, &nextNode
	if c.typeChanged(path, old, next) {
		// Every check below would repeat the same break in other words.
		return
	}
	c.enum(path, old, next)
	c.bounds(path, old, next)
	c.pattern(path, old, next)
	if !branch {
		c.defaults(path, old, next)
	}
	if old.Nullable && !next.Nullable {
		c.add(NullableRemoved, Breaking, path, "nullable removed; stored objects with null here fail validation on their next write and clients sending null are refused; keep nullable: true, or give the field a default and migrate the stored objects first")
	}
	if !branch && isTrue(old.XPreserveUnknownFields) && !isTrue(next.XPreserveUnknownFields) {
		c.add(PreserveUnknownFieldsRemoved, Breaking, path, "x-kubernetes-preserve-unknown-fields removed; every field the schema does not list is pruned from stored objects on their next write; keep it, or list every field the objects use")
	}
	c.rules(path, old, next)
	c.properties(path, old, next, branch)
	if old.Items != nil && next.Items != nil && old.Items.Schema != nil && next.Items.Schema != nil {
		c.schema(child(path, "[*]"), *old.Items.Schema, *next.Items.Schema, branch)
	}
	c.additionalProperties(path, old, next, branch)
	c.combinator(path, "allOf", old.AllOf, next.AllOf)
	c.combinator(path, "anyOf", old.AnyOf, next.AnyOf)
	c.combinator(path, "oneOf", old.OneOf, next.OneOf)
}

// typeChanged reports a narrowed type and says whether it did.
func (c *comparison) typeChanged(path string, old, next *apiextensionsv1.JSONSchemaProps) bool {
	from, to := typeName(old), typeName(next)
	if from == to || to == "any" || (from == "integer" && to == "number") {
		return false
	}
	c.add(TypeChanged, Breaking, path, "type changes from %s to %s; stored objects whose value here is not of type %s fail validation on their next write and clients sending one are refused; keep type %s in this version and bring the new type in a new field or a new version with a conversion",
		from, to, to, from)
	return true
}

// typeName is a node's type as the messages say it.
func typeName(s *apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int-or-string"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

func (c *comparison) enum(path string, old, next *apiextensionsv1.JSONSchemaProps) {
	if len(next.Enum) == 0 {
		return
	}
	if len(old.Enum) == 0 {
		c.add(EnumNarrowed, Breaking, path, "an enum is added (%s); stored objects with another value fail validation on their next write and clients sending one are refused; check the stored values first, or drop the enum",
			joinJSON(next.Enum))
		return
	}
	kept := make(map[string]bool, len(next.Enum))
	for _, v := range next.Enum {
		kept[compactJSON(v.Raw)] = true
	}
	var removed []apiextensionsv1.JSON
	for _, v := range old.Enum {
		if !kept[compactJSON(v.Raw)] {
			removed = append(removed, v)
		}
	}
	if len(removed) > 0 {
		c.add(EnumNarrowed, Breaking, path, "enum values removed (%s); stored objects with them fail validation on their next write and clients sending them are refused; keep them in the enum until no stored object or client uses them",
			joinJSON(removed))
	}
}

func (c *comparison) bounds(path string, old, next *apiextensionsv1.JSONSchemaProps) {
	c.lowerFloat(path, "minimum", old.Minimum, next.Minimum, old.ExclusiveMinimum, next.ExclusiveMinimum)
	c.upperFloat(path, "maximum", old.Maximum, next.Maximum, old.ExclusiveMaximum, next.ExclusiveMaximum)
	if m := next.MultipleOf; m != nil && (old.MultipleOf == nil || *old.MultipleOf != *m && math.Mod(*old.MultipleOf, *m) != 0) {
		c.tightened(path, "multipleOf", describeFloat(old.MultipleOf), formatFloat(*m))
	}
	c.lowerInt(path, "minLength", old.MinLength, next.MinLength)
	c.upperInt(path, "maxLength", old.MaxLength, next.MaxLength)
	c.lowerInt(path, "minItems", old.MinItems, next.MinItems)
	c.upperInt(path, "maxItems", old.MaxItems, next.MaxItems)
	c.lowerInt(path, "minProperties", old.MinProperties, next.MinProperties)
	c.upperInt(path, "maxProperties", old.MaxProperties, next.MaxProperties)
}

func (c *comparison) tightened(path, keyword, from, to string) {
	c.add(BoundTightened, Breaking, path, "%s tightened from %s to %s; stored objects outside it fail validation on their next write and clients sending such values are refused; keep %s at %s, or check the stored values first",
		keyword, from, to, keyword, from)
}

func (c *comparison) lowerFloat(path, keyword string, old, next *float64, oldExclusive, nextExclusive bool) {
	switch {
	case next == nil:
	case old == nil || *next > *old:
		c.tightened(path, keyword, describeFloat(old), formatFloat(*next))
	case *next == *old && !oldExclusive && nextExclusive:
		c.tightened(path, "exclusiveMinimum", "false", fmt.Sprintf("true (%s itself is refused now)", formatFloat(*next)))
	}
}

func (c *comparison) upperFloat(path, keyword string, old, next *float64, oldExclusive, nextExclusive bool) {
	switch {
	case next == nil:
	case old == nil || *next < *old:
		c.tightened(path, keyword, describeFloat(old), formatFloat(*next))
	case *next == *old && !oldExclusive && nextExclusive:
		c.tightened(path, "exclusiveMaximum", "false", fmt.Sprintf("true (%s itself is refused now)", formatFloat(*next)))
	}
}

// lowerInt compares a minimum count; an unset one is 0.
func (c *comparison) lowerInt(path, keyword string, old, next *int64) {
	var from int64
	if old != nil {
		from = *old
	}
	if next != nil && *next > from {
		c.tightened(path, keyword, strconv.FormatInt(from, 10), strconv.FormatInt(*next, 10))
	}
}

// upperInt compares a maximum count; an unset one is no limit.
func (c *comparison) upperInt(path, keyword string, old, next *int64) {
	if next == nil || (old != nil && *next >= *old) {
		return
	}
	from := "none"
	if old != nil {
		from = strconv.FormatInt(*old, 10)
	}
	c.tightened(path, keyword, from, strconv.FormatInt(*next, 10))
}

func (c *comparison) pattern(path string, old, next *apiextensionsv1.JSONSchemaProps) {
	switch {
	case next.Pattern == "" || next.Pattern == old.Pattern:
	case old.Pattern == "":
		c.add(PatternChanged, Breaking, path, "pattern %q added; stored objects whose value does not match fail validation on their next write and clients sending one are refused; check the stored values against it first", next.Pattern)
	default:
		c.add(PatternChanged, Breaking, path, "pattern changes from %q to %q and Annex cannot prove the new one accepts every value the old one did; check the stored values against it, then upgrade with crdPolicy Warn or Force", old.Pattern, next.Pattern)
	}
}

func (c *comparison) defaults(path string, old, next *apiextensionsv1.JSONSchemaProps) {
	switch {
	case old.Default == nil && next.Default == nil:
	case old.Default == nil:
		c.add(DefaultChanged, Warning, path, "default %s added; objects that omit the field, stored ones included, read with it from now on; make sure the controllers reading them expect it", compactJSON(next.Default.Raw))
	case next.Default == nil:
		c.add(DefaultChanged, Warning, path, "default %s removed; new objects that omit the field no longer get it; make sure the controllers reading them handle the field missing", compactJSON(old.Default.Raw))
	default:
		from, to := compactJSON(old.Default.Raw), compactJSON(next.Default.Raw)
		if from != to {
			c.add(DefaultChanged, Warning, path, "default changes from %s to %s; objects that omit the field get %s from now on; set the field explicitly where %s must stay", from, to, to, from)
		}
	}
}

func (c *comparison) rules(path string, old, next *apiextensionsv1.JSONSchemaProps) {
	if len(next.XValidations) == 0 {
		return
	}
	known := make(map[string]bool, len(old.XValidations))
	for _, r := range old.XValidations {
		known[r.Rule] = true
	}
	for _, r := range next.XValidations {
		if !known[r.Rule] {
			c.add(ValidationRuleAdded, Breaking, path, "validation rule %q added; stored objects that break it fail validation on their next write; check the stored objects against it first", r.Rule)
		}
	}
}

// properties compares the fields both nodes list, then the required ones.
func (c *comparison) properties(path string, old, next *apiextensionsv1.JSONSchemaProps, branch bool) {
	names := make([]string, 0, len(old.Properties))
	for name := range old.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := fieldPath(path, name)
		nextProp, ok := next.Properties[name]
		if !ok {
			if !branch && !isTrue(next.XPreserveUnknownFields) {
				c.add(FieldRemoved, Breaking, p, "removed from the schema; the API server prunes it from stored objects on their next write, and its data is lost; keep the field (deprecate it in its description) until no stored object sets it")
			}
			continue
		}
		c.schema(p, old.Properties[name], nextProp, branch)
	}
	for _, name := range next.Required {
		if !slices.Contains(old.Required, name) {
			c.add(RequiredAdded, Breaking, fieldPath(path, name), "made required; stored objects without it fail validation on their next write and clients that omit it are refused; give it a default instead, or set it on every stored object first")
		}
	}
}

func (c *comparison) additionalProperties(path string, old, next *apiextensionsv1.JSONSchemaProps, branch bool) {
	o, n := old.AdditionalProperties, next.AdditionalProperties
	if o == nil || (!o.Allows && o.Schema == nil) {
		return
	}
	values := child(path, ".*")
	switch {
	case n == nil || (!n.Allows && n.Schema == nil):
		if !branch {
			c.add(AdditionalPropertiesNarrowed, Breaking, path, "additionalProperties removed; map entries the schema does not list are pruned from stored objects on their next write; keep additionalProperties")
		}
	case o.Schema != nil && n.Schema != nil:
		c.schema(values, *o.Schema, *n.Schema, branch)
	case o.Schema == nil && n.Schema != nil:
		c.add(AdditionalPropertiesNarrowed, Breaking, path, "map values, which could be anything, must now match a schema (type %s); stored objects with other values fail validation on their next write; check the stored values first", typeName(n.Schema))
	}
}

// combinator compares allOf, anyOf or oneOf branches pairwise when their number
// stays the same. allOf may also gain branches after the existing ones (each
// one a new constraint); other changes in number are reported as a whole.
func (c *comparison) combinator(path, keyword string, old, next []apiextensionsv1.JSONSchemaProps) {
	if len(next) == 0 {
		return // removing the constraints accepts more
	}
	pairs := min(len(old), len(next))
	if len(old) != len(next) && keyword != "allOf" {
		if !reflect.DeepEqual(old, next) {
			c.add(CombinatorChanged, Breaking, path, "%s changes from %d to %d branches and Annex does not compare them branch by branch; check the stored objects against the new schema, then upgrade with crdPolicy Warn or Force", keyword, len(old), len(next))
		}
		return
	}
	for i := range pairs {
		c.schema(path, old[i], next[i], true)
	}
	if len(next) > len(old) {
		c.add(CombinatorChanged, Breaking, path, "%d allOf branches added; each adds constraints stored objects may break; check the stored objects against them first", len(next)-len(old))
	}
}

// child joins a parent path and a segment (".name", "[*]", ".*").
func child(parent, segment string) string {
	if parent == "." {
		return segment
	}
	return parent + segment
}

// fieldPath is the path of property name under parent: parent.name, or
// parent["name"] when the name is not a plain identifier (e.g.
// app.kubernetes.io/name). One concatenation: this runs for every node.
func fieldPath(parent, name string) string {
	if parent == "." {
		parent = ""
	}
	plain := name != ""
	for _, r := range name {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return parent + "." + name
	}
	return parent + "[" + strconv.Quote(name) + "]"
}

func isTrue(b *bool) bool { return b != nil && *b }

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func describeFloat(f *float64) string {
	if f == nil {
		return "none"
	}
	return formatFloat(*f)
}

// compactJSON normalises a JSON value so that equal values compare equal
// whatever their whitespace; bytes that are not JSON are returned as they are.
func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func joinJSON(values []apiextensionsv1.JSON) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = compactJSON(v.Raw)
	}
	return strings.Join(parts, ", ")
}
