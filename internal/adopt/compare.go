package adopt

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// State is what adoption would do to one object.
type State string

const (
	// Same: the live object has every field Annex renders, with the same
	// value; adoption would not write it.
	Same State = "same"
	// Differs: adoption would change the fields listed.
	Differs State = "differs"
	// Missing: Annex renders it and it does not exist; adoption would
	// create it.
	Missing State = "missing"
	// Extra: the release's manifest has it and Annex's render does not;
	// Helm made it, and adoption would leave it out of the installation.
	Extra State = "extra"
)

// Ref names an object: its API group, kind, namespace ("" for a
// cluster-scoped kind) and name. The version is left out, so the same
// object read at another version is the same Ref.
type Ref struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// RefOf is obj's Ref.
func RefOf(obj *unstructured.Unstructured) Ref {
	return Ref{Group: obj.GroupVersionKind().Group, Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String is "Kind namespace/name", with the group after the kind when it
// has one: "Deployment.apps team-a/web", "ConfigMap team-a/web".
func (r Ref) String() string {
	kind := r.Kind
	if r.Group != "" {
		kind += "." + r.Group
	}
	if r.Namespace == "" {
		return kind + " " + r.Name
	}
	return kind + " " + r.Namespace + "/" + r.Name
}

func compareRefs(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// FieldDiff is one field adoption would change: its path, as the API
// server writes field paths (.spec.template.spec.containers[name="web"].image),
// its live value (nil when unset) and Annex's.
type FieldDiff struct {
	Path   string `json:"path"`
	Live   any    `json:"live"`
	Render any    `json:"render"`
}

// String is `path: "live" → "render"` with the values as JSON, and
// "(unset)" for a field the live object does not have.
func (d FieldDiff) String() string {
	return d.Path + ": " + showValue(d.Live) + " → " + showValue(d.Render)
}

func showValue(v any) string {
	if v == nil {
		return "(unset)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ObjectComparison is one object's outcome.
type ObjectComparison struct {
	Object Ref   `json:"object"`
	State  State `json:"state"`
	// Fields are set when State is Differs, sorted by path.
	Fields []FieldDiff `json:"fields,omitempty"`
	// UID is the live object's, when it exists: adoption keeps it.
	UID types.UID `json:"uid,omitempty"`
}

// Comparison is the outcome for every object, ordered by group, kind,
// namespace and name.
type Comparison struct {
	Objects []ObjectComparison `json:"objects"`
	// Hooks counts the rendered Helm hooks, which are not compared:
	// adoption does not run them again.
	Hooks int `json:"hooks,omitempty"`
}

// Count returns how many objects are in state s.
func (c Comparison) Count(s State) int {
	n := 0
	for _, o := range c.Objects {
		if o.State == s {
			n++
		}
	}
	return n
}

// Compare compares Annex's render of a release with the live objects and
// with the release's own manifest. Every object must already be placed
// (namespace set for namespaced kinds, empty for cluster-scoped ones, see
// Place). rendered are the objects Annex renders (CRDs and templates);
// Helm hooks among them (annotation helm.sh/hook) are counted, not
// compared. live are the objects as read from the cluster, matched to
// rendered by Ref; a rendered object without a live one is Missing.
// released are the objects of the release's manifest; those Annex does not
// render are Extra.
//
// An object is Same when each field the render sets has the same value
// live (see Diff); fields only live has — status, server-set metadata,
// defaults, other managers' fields — are not compared. Compare changes
// none of its arguments.
func Compare(rendered, live, released []*unstructured.Unstructured) Comparison {
	var out Comparison
	byRef := map[Ref]*unstructured.Unstructured{}
	for _, o := range live {
		byRef[RefOf(o)] = o
	}
	renderedRefs := map[Ref]bool{}
	for _, r := range rendered {
		ref := RefOf(r)
		if IsHook(r) {
			out.Hooks++
			continue
		}
		renderedRefs[ref] = true
		l, ok := byRef[ref]
		switch {
		case !ok || l == nil:
			out.Objects = append(out.Objects, ObjectComparison{Object: ref, State: Missing})
		default:
			if fields := Diff(r, l); len(fields) > 0 {
				out.Objects = append(out.Objects, ObjectComparison{Object: ref, State: Differs, Fields: fields, UID: l.GetUID()})
			} else {
				out.Objects = append(out.Objects, ObjectComparison{Object: ref, State: Same, UID: l.GetUID()})
			}
		}
	}
	for _, r := range released {
		ref := RefOf(r)
		if !renderedRefs[ref] && !IsHook(r) {
			renderedRefs[ref] = true // a manifest listing an object twice
			out.Objects = append(out.Objects, ObjectComparison{Object: ref, State: Extra})
		}
	}
	slices.SortStableFunc(out.Objects, func(a, b ObjectComparison) int { return compareRefs(a.Object, b.Object) })
	return out
}

// IsHook reports whether obj is a Helm hook (annotation helm.sh/hook).
func IsHook(obj *unstructured.Unstructured) bool {
	_, ok := obj.GetAnnotations()["helm.sh/hook"]
	return ok
}

// serverMetadata are metadata fields the API server sets or owns; a
// render never sets them meaningfully.
var serverMetadata = map[string]bool{
	"creationTimestamp": true, "deletionTimestamp": true, "deletionGracePeriodSeconds": true,
	"generation": true, "managedFields": true, "resourceVersion": true, "selfLink": true, "uid": true,
}

// Diff returns the fields, sorted by path, whose value in live differs
// from the one rendered sets: every field rendered sets must have the same
// value live; fields live has and rendered does not set are not compared.
// Maps compare key by key; lists of scalars must be equal; lists of
// objects with distinct "name" fields (containers, env, volumes, ports)
// compare element by name, other lists of objects element by element when
// their lengths agree, and as a whole otherwise. Numbers compare by value,
// and resource quantities under resources.limits and resources.requests by
// amount ("0.5" is "500m"). status and server-set metadata are never
// compared. nil means adoption would write nothing to live.
//
// A Secret's stringData is compared as the data the API server stores it
// as (base64), and the values of a Secret's data are never returned:
// FieldDiff.Live and Render hold "(hidden)" instead.
func Diff(rendered, live *unstructured.Unstructured) []FieldDiff {
	secret := isSecret(rendered)
	if secret {
		rendered = storedSecret(rendered)
	}
	var out []FieldDiff
	for _, k := range slices.Sorted(maps.Keys(rendered.Object)) {
		want := rendered.Object[k]
		switch k {
		case "status":
		case "metadata":
			wantMeta, _ := want.(map[string]any)
			liveMeta, _ := live.Object["metadata"].(map[string]any)
			for _, mk := range slices.Sorted(maps.Keys(wantMeta)) {
				if !serverMetadata[mk] {
					diffValue(".metadata."+mk, wantMeta[mk], liveMeta[mk], &out)
				}
			}
		default:
			diffValue("."+k, want, live.Object[k], &out)
		}
	}
	slices.SortStableFunc(out, func(a, b FieldDiff) int { return strings.Compare(a.Path, b.Path) })
	if secret {
		for i := range out {
			if out[i].Path == ".data" || strings.HasPrefix(out[i].Path, ".data.") {
				out[i].Live, out[i].Render = hidden(out[i].Live), hidden(out[i].Render)
			}
		}
	}
	return out
}

// hiddenValue stands for a Secret's value in a FieldDiff.
const hiddenValue = "(hidden)"

func hidden(v any) any {
	if v == nil {
		return nil
	}
	return hiddenValue
}

func isSecret(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// storedSecret is a copy of a Secret with its stringData merged into data
// as base64, as the API server stores it (stringData wins).
func storedSecret(obj *unstructured.Unstructured) *unstructured.Unstructured {
	sd, ok := obj.Object["stringData"].(map[string]any)
	if !ok {
		return obj
	}
	c := obj.DeepCopy()
	data, _ := c.Object["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		if str, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(str))
		}
	}
	c.Object["data"] = data
	delete(c.Object, "stringData")
	return c
}

func diffValue(path string, want, got any, out *[]FieldDiff) {
	switch w := want.(type) {
	case nil:
		// A null asks for nothing (Helm and server-side apply drop it).
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			if len(w) > 0 || got != nil {
				*out = append(*out, FieldDiff{Path: path, Live: got, Render: want})
			}
			return
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			diffValue(path+"."+k, w[k], g[k], out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			if len(w) > 0 || got != nil {
				*out = append(*out, FieldDiff{Path: path, Live: got, Render: want})
			}
			return
		}
		diffList(path, w, g, out)
	default:
		if !scalarEqual(path, w, got) {
			*out = append(*out, FieldDiff{Path: path, Live: got, Render: want})
		}
	}
}

func diffList(path string, want, got []any, out *[]FieldDiff) {
	if !slices.ContainsFunc(want, isObject) {
		if !slices.EqualFunc(want, got, func(x, y any) bool { return scalarEqual(path, x, y) }) {
			*out = append(*out, FieldDiff{Path: path, Live: got, Render: want})
		}
		return
	}
	if byName(want) && byName(got) {
		for _, w := range want {
			name := w.(map[string]any)["name"]
			quoted, _ := json.Marshal(name)
			p := path + "[name=" + string(quoted) + "]"
			i := slices.IndexFunc(got, func(g any) bool { return g.(map[string]any)["name"] == name })
			if i < 0 {
				*out = append(*out, FieldDiff{Path: p, Live: nil, Render: w})
				continue
			}
			diffValue(p, w, got[i], out)
		}
		return
	}
	if len(want) == len(got) {
		for i := range want {
			diffValue(path+"["+strconv.Itoa(i)+"]", want[i], got[i], out)
		}
		return
	}
	*out = append(*out, FieldDiff{Path: path, Live: got, Render: want})
}

// byName reports whether list holds objects with distinct string names,
// the merge key of most Kubernetes lists.
func byName(list []any) bool {
	seen := map[string]bool{}
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		name, ok := m["name"].(string)
		if !ok || seen[name] {
			return false
		}
		seen[name] = true
	}
	return true
}

func isObject(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// scalarEqual compares JSON scalars at path: numbers by value whatever
// their Go type, quantities of resource limits and requests by amount.
func scalarEqual(path string, x, y any) bool {
	if fx, ok := number(x); ok {
		if fy, ok := number(y); ok {
			return fx == fy
		}
	}
	if isQuantityPath(path) {
		qx, okx := quantity(x)
		qy, oky := quantity(y)
		if okx && oky {
			return qx.Cmp(qy) == 0
		}
	}
	return reflect.DeepEqual(x, y)
}

func isQuantityPath(path string) bool {
	return strings.Contains(path, ".resources.limits.") || strings.Contains(path, ".resources.requests.")
}

func quantity(v any) (resource.Quantity, bool) {
	switch x := v.(type) {
	case string:
		q, err := resource.ParseQuantity(x)
		return q, err == nil
	default:
		if f, ok := number(v); ok {
			q, err := resource.ParseQuantity(strconv.FormatFloat(f, 'f', -1, 64))
			return q, err == nil
		}
	}
	return resource.Quantity{}, false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// ParseManifest splits a release manifest (YAML documents separated by
// ---) into objects, skipping empty documents. The error names the
// document by its number, from 1.
func ParseManifest(manifest string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for i := 1; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("manifest document %d: %w", i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("manifest document %d: kind and metadata.name are required", i)
		}
		out = append(out, u)
	}
}

// Place sets each object's namespace as the API server would see it:
// none for a cluster-scoped kind, namespace for a namespaced object that
// names none. namespaced says whether a kind is namespaced; its error
// (a kind the cluster does not serve) is returned naming the object. The
// objects are modified in place.
func Place(objs []*unstructured.Unstructured, namespace string, namespaced func(schema.GroupVersionKind) (bool, error)) error {
	for _, o := range objs {
		ns, err := namespaced(o.GroupVersionKind())
		if err != nil {
			return fmt.Errorf("%s: %w", RefOf(o), err)
		}
		switch {
		case !ns:
			o.SetNamespace("")
		case o.GetNamespace() == "":
			o.SetNamespace(namespace)
		}
	}
	return nil
}
