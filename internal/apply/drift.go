package apply

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Drift is an object of a set whose live state differs from what Apply
// would write.
type Drift struct {
	Object v1alpha1.ObjectReference
	// Missing is true when the object does not exist (it was deleted, or
	// its kind is gone).
	Missing bool
	// Fields are the paths, such as ".data.key", whose live value differs
	// from the desired one, or that Annex still manages although the
	// desired object no longer sets them. Empty when Missing.
	Fields []string
}

// Diff compares the regular objects of set (Helm hooks are not compared),
// labelled for owner and placed as Apply would place them, with the live
// objects, and returns those that drifted, ordered by group, kind,
// namespace and name. It writes nothing: it reads each object, decides
// with drifted, and only when that finds a difference confirms it with a
// server-side dry-run apply (which sees the server's defaults and
// normalisation, so that e.g. a desired "0.5" CPU is not drift against a
// live "500m"). A dry-run that reports a field conflict counts as drift.
//
// Diff also returns the health of the objects as it read them, in
// inventory order, so that a caller checking drift and health need not
// read everything twice; like Health's, it names the stuck Pods of
// workloads that are not ready. Errors are *ObjectErrors for objects that cannot
// be read or dry-run, joined; the drift found for the other objects is
// still returned.
func (a *Applier) Diff(ctx context.Context, owner Owner, set Set, defaultNamespace string) ([]Drift, Health, error) {
	set = copySet(set)
	objs := regularObjects(slices.Concat(set.CRDs, set.Objects))
	drifts := make([]*Drift, len(objs))
	live := make([]*unstructured.Unstructured, len(objs))
	errs := make([]error, len(objs))
	forEach(a.workers(), len(objs), func(i int) {
		drifts[i], live[i], errs[i] = a.diffOne(ctx, owner, objs[i], defaultNamespace)
	})
	var out []Drift
	crds := definedKinds(objs)
	entries := make([]phasedRef, 0, len(objs))
	for i, d := range drifts {
		if d != nil {
			out = append(out, *d)
		}
		ref := refOf(objs[i])
		if d != nil {
			ref = d.Object
		}
		entries = append(entries, phasedRef{ref: ref, phase: phaseOf(gvkOf(ref).GroupKind(), crds), live: live[i]})
	}
	slices.SortFunc(out, func(x, y Drift) int { return compareRefs(x.Object, y.Object) })
	h := resultOf(entries).Health
	a.checkWebhooks(ctx, &h, liveOf(entries), true)
	a.nameStuckPods(ctx, h, func(ref v1alpha1.ObjectReference) *unstructured.Unstructured {
		if i := slices.IndexFunc(entries, func(e phasedRef) bool { return e.ref == ref }); i >= 0 {
			return entries[i].live
		}
		return nil
	})
	return out, h, errors.Join(errs...)
}

// diffOne returns the drift of one object, or nil when it has none, and
// the object as read (nil when it does not exist).
func (a *Applier) diffOne(ctx context.Context, owner Owner, obj *unstructured.Unstructured, defaultNamespace string) (*Drift, *unstructured.Unstructured, error) {
	gvk := obj.GroupVersionKind()
	if _, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); meta.IsNoMatchError(err) {
		ref := refOf(obj)
		if ref.Namespace == "" {
			ref.Namespace = defaultNamespace
		}
		return &Drift{Object: ref, Missing: true}, nil, nil
	}
	if err := a.place(obj, defaultNamespace); err != nil {
		return nil, nil, err
	}
	labelFor(obj, owner)
	obj.SetResourceVersion("")
	obj.SetManagedFields(nil)
	ref := refOf(obj)

	live, err := a.get(ctx, ref)
	if err != nil {
		return nil, nil, &ObjectError{Op: "read", Object: ref, Err: err}
	}
	if live == nil {
		return &Drift{Object: ref, Missing: true}, nil, nil
	}
	if adopted := owner.adoptedAs(live); adopted != nil {
		// Adopted unwritten: it lacks Annex's labels until Annex claims it.
		same, err := a.unchangedAdopted(ctx, obj, live, adopted)
		if err != nil {
			return nil, live, &ObjectError{Op: "dry-run apply", Object: ref, Err: err}
		}
		if same {
			return nil, live, nil
		}
		fields := adoptedDrift(obj, live)
		if len(fields) == 0 {
			fields = []string{".metadata"} // rendered otherwise than when adopted
		}
		return &Drift{Object: ref, Fields: fields}, live, nil
	}
	fields := drifted(obj, live)
	if len(fields) == 0 {
		return nil, live, nil
	}
	// The pure comparison cannot see defaults and normalisation: ask the
	// server what an apply would make of the object.
	dry := obj.DeepCopy()
	err = a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry),
		client.FieldOwner(v1alpha1.FieldManager), client.DryRunAll)
	switch {
	case err == nil:
	case apierrors.IsConflict(err):
		return &Drift{Object: ref, Fields: fields}, live, nil
	default:
		return nil, live, &ObjectError{Op: "dry-run apply", Object: ref, Err: err}
	}
	if sameContent(dry, live) {
		return nil, live, nil
	}
	return &Drift{Object: ref, Fields: fields}, live, nil
}

// sameContent reports whether x and y are equal but for the bookkeeping
// an apply updates even when nothing else changes.
func sameContent(x, y *unstructured.Unstructured) bool {
	strip := func(o *unstructured.Unstructured) map[string]any {
		c := o.DeepCopy()
		c.SetManagedFields(nil)
		c.SetResourceVersion("")
		c.SetGeneration(0)
		return c.Object
	}
	return reflect.DeepEqual(strip(x), strip(y))
}

// serverMetadata are metadata fields the API server sets; their desired
// values are never compared.
var serverMetadata = map[string]bool{
	"creationTimestamp": true, "deletionTimestamp": true, "deletionGracePeriodSeconds": true,
	"generation": true, "managedFields": true, "resourceVersion": true, "selfLink": true, "uid": true,
}

// drifted returns the paths, sorted, at which applying desired over live
// would change live, judged without the server:
//
//   - every field desired sets must have the same value in live; fields
//     live has and desired does not set (server defaults, other managers'
//     fields, status) are ignored. Lists of scalars must be equal; in lists
//     of objects each desired element must match a live element, in order,
//     as a subset (so defaulted fields inside elements are ignored).
//     Numbers compare by value; a string against a number is a difference
//     (the server may normalise it: Diff confirms with a dry-run).
//   - every field in live's managedFields entry of field manager "annex"
//     with operation Apply must still be set by desired (an apply would
//     remove it). A list element named by key matches a desired element
//     that agrees on the key fields it sets (a key field the server
//     defaults, such as a port's protocol, may be left out). Without such
//     an entry the result is ".metadata.managedFields": Annex owns nothing
//     yet, so an apply is needed — unless Annex created live
//     (ApplyOptions.Create) and has not applied it since, when desired is
//     the set that created it and only the first rule applies.
//
// A nil result means an apply of desired would change nothing live.
// Server-set metadata (resourceVersion, uid, ...) and status are never
// compared.
func drifted(desired, live *unstructured.Unstructured) []string {
	var paths []string
	for k, want := range desired.Object {
		switch k {
		case "status":
		case "metadata":
			wantMeta, _ := want.(map[string]any)
			liveMeta, _ := live.Object["metadata"].(map[string]any)
			for mk, mv := range wantMeta {
				if !serverMetadata[mk] {
					compareValue(".metadata."+mk, mv, liveMeta[mk], &paths)
				}
			}
		default:
			compareValue("."+k, want, live.Object[k], &paths)
		}
	}
	paths = append(paths, removedFields(desired, live)...)
	slices.Sort(paths)
	return slices.Compact(paths)
}

// compareValue appends to out the paths under path at which got lacks
// what want sets.
func compareValue(path string, want, got any, out *[]string) {
	switch w := want.(type) {
	case nil:
		// A null asks for nothing.
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			if len(w) > 0 || got != nil {
				*out = append(*out, path)
			}
			return
		}
		for k, v := range w {
			compareValue(path+"."+k, v, g[k], out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			if len(w) > 0 || got != nil {
				*out = append(*out, path)
			}
			return
		}
		compareList(path, w, g, out)
	default:
		if !scalarEqual(w, got) {
			*out = append(*out, path)
		}
	}
}

// compareList compares a desired list with a live one: scalars must be
// equal in order; objects are compared element by element when the
// lengths agree, and otherwise each desired element must match a later
// live element than the one before it.
func compareList(path string, want, got []any, out *[]string) {
	if !slices.ContainsFunc(want, isObject) {
		if !slices.EqualFunc(want, got, scalarEqual) {
			*out = append(*out, path)
		}
		return
	}
	if byName(want) && byName(got) {
		for _, w := range want {
			name := w.(map[string]any)["name"]
			p := path + "[" + keyPath(map[string]any{"name": name}) + "]"
			i := slices.IndexFunc(got, func(g any) bool { return g.(map[string]any)["name"] == name })
			if i < 0 {
				*out = append(*out, p)
				continue
			}
			compareValue(p, w, got[i], out)
		}
		return
	}
	if len(want) == len(got) {
		for i := range want {
			compareValue(path+"["+strconv.Itoa(i)+"]", want[i], got[i], out)
		}
		return
	}
	j := 0
	for i, w := range want {
		for j < len(got) && !matches(w, got[j]) {
			j++
		}
		if j == len(got) {
			*out = append(*out, path+"["+strconv.Itoa(i)+"]")
			return
		}
		j++
	}
}

// byName reports whether list holds objects with distinct string names,
// the merge key of most Kubernetes lists (containers, env, volumes).
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

// keyPath renders the key fields of a list element the way the API
// server names them in field paths: name="web" or
// containerPort=8080,protocol="TCP".
func keyPath(key map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(key)) {
		v, _ := json.Marshal(key[k])
		parts = append(parts, k+"="+string(v))
	}
	return strings.Join(parts, ",")
}

func isObject(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// matches reports whether got has everything want sets.
func matches(want, got any) bool {
	var diffs []string
	compareValue("", want, got, &diffs)
	return len(diffs) == 0
}

// scalarEqual compares JSON scalars; numbers compare by value whatever
// their Go type.
func scalarEqual(x, y any) bool {
	if fx, ok := number(x); ok {
		fy, ok := number(y)
		return ok && fx == fy
	}
	return reflect.DeepEqual(x, y)
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

// removedFields returns the paths that live's "annex" apply entry of
// managedFields owns and desired no longer sets.
func removedFields(desired, live *unstructured.Unstructured) []string {
	var entry *metav1.ManagedFieldsEntry
	for _, e := range live.GetManagedFields() {
		if e.Manager == v1alpha1.FieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			entry = &e
			break
		}
	}
	if entry == nil && createdEntry(live) >= 0 {
		// Created by Annex (ApplyOptions.Create) and not applied since:
		// the entry of the create holds the fields the server defaulted
		// too, so it cannot tell what desired dropped. A set compared
		// here is the one that created it (a new revision is applied,
		// and applyOne claims the entry first).
		return nil
	}
	if entry == nil || entry.FieldsV1 == nil {
		return []string{".metadata.managedFields"}
	}
	var fields map[string]any
	if err := json.Unmarshal(entry.FieldsV1.GetRawBytes(), &fields); err != nil {
		return []string{".metadata.managedFields"}
	}
	var out []string
	walkManaged("", fields, desired.Object, live.Object, &out)
	return out
}

// walkManaged appends to out the paths of the managed field set fields
// (in the fieldsV1 format: "f:name", "k:{key}", "v:value", "i:index")
// that desired does not set. live is the value at path on the server: a
// list Annex owns whole (an atomic list, such as a CRD's spec.versions,
// whose entry has no element keys) that holds more elements live than
// desired sets has lost elements, which the element-wise comparison
// cannot see.
func walkManaged(path string, fields map[string]any, desired, live any, out *[]string) {
	for key, sub := range fields {
		subFields, _ := sub.(map[string]any)
		prefix, rest, _ := strings.Cut(key, ":")
		switch prefix {
		case "f":
			p := path + "." + rest
			if p == ".status" {
				continue
			}
			d, _ := desired.(map[string]any)
			l, _ := live.(map[string]any)
			v := d[rest]
			if v == nil {
				*out = append(*out, p)
				continue
			}
			if len(subFields) > 0 {
				walkManaged(p, subFields, v, l[rest], out)
				continue
			}
			if want, ok := v.([]any); ok {
				if got, ok := l[rest].([]any); ok && len(got) > len(want) {
					*out = append(*out, p)
				}
			}
		case "k":
			var keyFields map[string]any
			list, _ := desired.([]any)
			liveList, _ := live.([]any)
			if err := json.Unmarshal([]byte(rest), &keyFields); err != nil {
				*out = append(*out, path+"["+rest+"]")
				continue
			}
			p := path + "[" + keyPath(keyFields) + "]"
			i := slices.IndexFunc(list, func(e any) bool { return keyMatches(e, keyFields) })
			if i < 0 {
				*out = append(*out, p)
				continue
			}
			var liveElem any
			if j := slices.IndexFunc(liveList, func(e any) bool { return keyMatches(e, keyFields) }); j >= 0 {
				liveElem = liveList[j]
			}
			walkManaged(p, subFields, list[i], liveElem, out)
		case "v":
			var value any
			list, _ := desired.([]any)
			if err := json.Unmarshal([]byte(rest), &value); err != nil ||
				!slices.ContainsFunc(list, func(e any) bool { return scalarEqual(e, value) }) {
				*out = append(*out, path+"["+rest+"]")
			}
		case "i":
			list, _ := desired.([]any)
			liveList, _ := live.([]any)
			n, err := strconv.Atoi(rest)
			if err != nil || n >= len(list) {
				*out = append(*out, path+"["+rest+"]")
				continue
			}
			var liveElem any
			if n < len(liveList) {
				liveElem = liveList[n]
			}
			walkManaged(path+"["+rest+"]", subFields, list[n], liveElem, out)
		}
	}
}

// keyMatches reports whether the list element e agrees with every key
// field it sets.
func keyMatches(e any, keyFields map[string]any) bool {
	m, ok := e.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range keyFields {
		if got, set := m[k]; set && !scalarEqual(got, v) {
			return false
		}
	}
	return true
}
