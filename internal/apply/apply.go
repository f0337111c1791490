// Package apply writes rendered objects into a cluster with server-side
// apply, in phases, and keeps track of what it wrote: the one applier behind
// every engine (Helm charts, Annex packages, operators).
//
// Every object it writes carries the labels of the installation that owns
// it; prune, delete and conflict detection trust those labels and nothing
// else, so Annex never removes or takes over an object it did not create.
package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// DefaultCRDEstablishTimeout bounds the wait for applied CRDs to become
// Established when Applier.CRDEstablishTimeout is zero.
const DefaultCRDEstablishTimeout = 30 * time.Second

// Applier applies, prunes, deletes and checks the health of sets of objects
// in one cluster.
type Applier struct {
	// Client reads and writes unstructured objects; it must use Mapper.
	Client client.Client
	// Mapper maps kinds to resources. It must reload on a miss, so that
	// kinds of CRDs applied in the same call become usable.
	Mapper meta.RESTMapper
	// CRDEstablishTimeout bounds the wait for applied CRDs to become
	// Established; zero means DefaultCRDEstablishTimeout.
	CRDEstablishTimeout time.Duration
}

// New returns an Applier for the cluster cfg points at, with a RESTMapper
// that discovers new kinds when it meets them.
func New(cfg *rest.Config) (*Applier, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("build HTTP client: %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("build REST mapper: %w", err)
	}
	c, err := client.New(cfg, client.Options{HTTPClient: httpClient, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("build client: %w", err)
	}
	return &Applier{Client: c, Mapper: mapper}, nil
}

// Owner identifies the installation that owns applied objects. It is
// written as labels on every object Apply writes.
type Owner struct {
	Name, Namespace string
}

func (o Owner) String() string { return o.Namespace + "/" + o.Name }

func (o Owner) labels() map[string]string {
	return map[string]string{
		v1alpha1.LabelManagedBy:             v1alpha1.ManagedByValue,
		v1alpha1.LabelInstallationName:      o.Name,
		v1alpha1.LabelInstallationNamespace: o.Namespace,
	}
}

// owns reports whether obj carries all of o's labels.
func (o Owner) owns(obj *unstructured.Unstructured) bool {
	l := obj.GetLabels()
	for k, v := range o.labels() {
		if l[k] != v {
			return false
		}
	}
	return true
}

// installationOf returns "namespace/name" of the installation whose labels
// obj carries, or "" when it carries none.
func installationOf(obj *unstructured.Unstructured) string {
	l := obj.GetLabels()
	if l[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue || l[v1alpha1.LabelInstallationName] == "" {
		return ""
	}
	return Owner{Name: l[v1alpha1.LabelInstallationName], Namespace: l[v1alpha1.LabelInstallationNamespace]}.String()
}

// Set is what one installation wants in a cluster.
type Set struct {
	// CRDs are CustomResourceDefinitions; a CRD in Objects is treated alike.
	CRDs []*unstructured.Unstructured
	// Objects are all other objects, custom resources included.
	Objects []*unstructured.Unstructured
}

// Apply writes set into the cluster with server-side apply as field manager
// v1alpha1.FieldManager, without forcing ownership, and returns the
// inventory of what it applied, ordered by phase, group, kind, namespace
// and name. The objects of set are not modified.
//
// Objects go in phases: CRDs (then Apply waits until each is Established,
// at most CRDEstablishTimeout), Namespaces, ServiceAccounts and RBAC,
// everything else, and last the custom resources whose CRD is in set. Each
// object is applied once. A namespaced object without a namespace is put in
// defaultNamespace; a cluster-scoped one loses its namespace.
//
// Before writing anything Apply checks that every kind not defined by set
// exists. Errors: *ConflictError when an object belongs to another
// installation or some of its fields to another field manager; *ObjectError
// for any other failure of one object (a missing kind among them). On an
// error Apply still returns the inventory of the objects it did apply, so
// that the caller can record them (and later prune or delete them).
func (a *Applier) Apply(ctx context.Context, owner Owner, defaultNamespace string, set Set) ([]v1alpha1.ObjectReference, error) {
	if owner.Name == "" || owner.Namespace == "" {
		return nil, fmt.Errorf("apply: owner needs a name and a namespace (got %q)", owner.String())
	}
	all := make([]*unstructured.Unstructured, 0, len(set.CRDs)+len(set.Objects))
	for _, o := range slices.Concat(set.CRDs, set.Objects) {
		all = append(all, o.DeepCopy())
	}
	crds := definedKinds(all)
	// Apply order: by phase, and within a phase as given.
	slices.SortStableFunc(all, func(x, y *unstructured.Unstructured) int {
		return int(phaseOf(x.GroupVersionKind().GroupKind(), crds) - phaseOf(y.GroupVersionKind().GroupKind(), crds))
	})

	// Fail before any write when a kind the set does not bring is missing.
	for _, o := range all {
		if phaseOf(o.GroupVersionKind().GroupKind(), crds) == phaseCustomResources {
			continue
		}
		if err := a.place(o, defaultNamespace); err != nil {
			return nil, err
		}
	}

	var (
		inventory  []phasedRef
		appliedCRD []*unstructured.Unstructured
		seen       = map[objKey]bool{}
	)
	for i, o := range all {
		p := phaseOf(o.GroupVersionKind().GroupKind(), crds)
		if err := a.place(o, defaultNamespace); err != nil {
			return sortInventory(inventory), err
		}
		ref := refOf(o)
		if seen[keyOf(ref)] {
			return sortInventory(inventory), &ObjectError{Op: "apply", Object: ref,
				Err: errors.New("the object appears more than once in the set; remove the duplicate")}
		}
		seen[keyOf(ref)] = true
		if err := a.applyOne(ctx, owner, o, ref); err != nil {
			return sortInventory(inventory), err
		}
		inventory = append(inventory, phasedRef{ref: ref, phase: p})
		if p == phaseCRDs {
			appliedCRD = append(appliedCRD, o)
		}
		lastCRD := p == phaseCRDs && (i+1 == len(all) || phaseOf(all[i+1].GroupVersionKind().GroupKind(), crds) != phaseCRDs)
		if lastCRD {
			if err := a.waitEstablished(ctx, appliedCRD); err != nil {
				return sortInventory(inventory), err
			}
		}
	}
	return sortInventory(inventory), nil
}

// place sets obj's namespace from the scope of its kind: defaultNamespace
// for a namespaced object without one, none for a cluster-scoped object.
func (a *Applier) place(obj *unstructured.Unstructured, defaultNamespace string) error {
	gvk := obj.GroupVersionKind()
	mapping, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return &ObjectError{Op: "apply", Object: refOf(obj), Err: a.mappingError(refOf(obj), err)}
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		obj.SetNamespace("")
		return nil
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(defaultNamespace)
	}
	if obj.GetNamespace() == "" {
		return &ObjectError{Op: "apply", Object: refOf(obj),
			Err: fmt.Errorf("metadata.namespace: required for namespaced kind %q; set it in the object or give the installation a target namespace", gvk.Kind)}
	}
	return nil
}

// mappingError explains a failed kind lookup in words a person can act on.
func (a *Applier) mappingError(ref v1alpha1.ObjectReference, err error) error {
	if !meta.IsNoMatchError(err) {
		return fmt.Errorf("look up API kind %q in group %q: %w", ref.Kind, ref.Group, err)
	}
	gvk := gvkOf(ref)
	if mappings, anyErr := a.Mapper.RESTMappings(gvk.GroupKind()); anyErr == nil && len(mappings) > 0 {
		served := make([]string, 0, len(mappings))
		for _, m := range mappings {
			served = append(served, m.GroupVersionKind.Version)
		}
		slices.Sort(served)
		return fmt.Errorf("API kind %q in group %q has no version %q (served: %s): change apiVersion",
			ref.Kind, ref.Group, ref.Version, strings.Join(slices.Compact(served), ", "))
	}
	return fmt.Errorf("no API kind %q in group %q: install the extension that provides it first", ref.Kind, ref.Group)
}

// applyOne labels obj for owner and applies it, refusing objects that
// belong to another installation.
func (a *Applier) applyOne(ctx context.Context, owner Owner, obj *unstructured.Unstructured, ref v1alpha1.ObjectReference) error {
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(obj.GroupVersionKind())
	switch err := a.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return &ObjectError{Op: "apply", Object: ref, Err: err}
	default:
		if other := installationOf(existing); other != "" && other != owner.String() {
			return &ConflictError{Object: ref, Installation: other}
		}
	}

	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, owner.labels())
	obj.SetLabels(labels)
	// Fields the server owns must not be sent back.
	obj.SetResourceVersion("")
	obj.SetManagedFields(nil)

	err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.FieldOwner(v1alpha1.FieldManager), &client.ApplyOptions{Force: ptr.To(false)})
	if err == nil {
		return nil
	}
	if c := fieldConflict(ref, err); c != nil {
		return c
	}
	return &ObjectError{Op: "apply", Object: ref, Err: err}
}

// waitEstablished waits until every CRD in crds is Established, so that
// its kind can be applied, or fails with the CRD's own explanation.
func (a *Applier) waitEstablished(ctx context.Context, crds []*unstructured.Unstructured) error {
	timeout := a.CRDEstablishTimeout
	if timeout == 0 {
		timeout = DefaultCRDEstablishTimeout
	}
	for _, crd := range crds {
		ref := refOf(crd)
		var why string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(crd.GroupVersionKind())
			if err := a.Client.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return false, err
			}
			established, reason := crdEstablished(got)
			why = reason
			return established, nil
		})
		if err != nil {
			if why == "" {
				why = err.Error()
			}
			return &ObjectError{Op: "apply", Object: ref,
				Err: fmt.Errorf("not Established within %s: %s", timeout, why)}
		}
	}
	return nil
}

// crdEstablished reports whether crd's Established condition is True and,
// when it is not, what its conditions say.
func crdEstablished(crd *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	var why []string
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, status, msg := m["type"], m["status"], m["message"]
		if typ == "Established" && status == "True" {
			return true, ""
		}
		if status != "True" && msg != nil && msg != "" {
			why = append(why, fmt.Sprintf("%v: %v", typ, msg))
		}
	}
	if len(why) == 0 {
		return false, "condition Established is not True yet"
	}
	return false, strings.Join(why, "; ")
}
