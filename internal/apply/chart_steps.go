package apply

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// HookEvent is a Helm hook event: when a hook object is applied.
type HookEvent string

// The Helm hook events Annex runs. `test` hooks never reach the applier:
// the renderer drops them.
const (
	HookPreInstall  HookEvent = "pre-install"
	HookPostInstall HookEvent = "post-install"
	HookPreUpgrade  HookEvent = "pre-upgrade"
	HookPostUpgrade HookEvent = "post-upgrade"
	HookPreDelete   HookEvent = "pre-delete"
	HookPostDelete  HookEvent = "post-delete"
)

// Helm's hook annotations.
const (
	annotationHook         = "helm.sh/hook"
	annotationHookWeight   = "helm.sh/hook-weight"
	annotationDeletePolicy = "helm.sh/hook-delete-policy"
)

// hookDeletePolicy says when a hook object is deleted.
type hookDeletePolicy string

const (
	// policyBeforeCreation deletes the previous object of the same name
	// before the hook is applied again; Helm's default.
	policyBeforeCreation hookDeletePolicy = "before-hook-creation"
	// policySucceeded deletes the hook object once it succeeded.
	policySucceeded hookDeletePolicy = "hook-succeeded"
	// policyFailed deletes the hook object once it failed.
	policyFailed hookDeletePolicy = "hook-failed"
)

// Step is one ordered step of an apply: a phase of regular objects, or
// the hooks of one event and weight. Every object of a step is applied
// before any object of the next step.
type Step struct {
	// Name says what the step is, e.g. "CustomResourceDefinitions" or
	// "pre-install hooks (weight -5)".
	Name string
	// Hook is the event of a hook step; "" for a phase of regular objects.
	Hook HookEvent
	// Weight is the helm.sh/hook-weight shared by a hook step's objects.
	Weight int
	// Objects are applied in this order for a hook step (one at a time,
	// each awaited), and concurrently for a regular step.
	Objects []*unstructured.Unstructured

	phase phase
}

// ChartSteps orders set into the steps of an install (or, with isUpgrade, an
// upgrade) of a release in namespace, the way Helm does:
//
//  0. the release's namespace, when set brings a Namespace named namespace
//     (Annex creates a target namespace that does not exist, as
//     `helm install --create-namespace` does), in a step of its own before
//     anything else, so that every hook and object finds its namespace
//     whichever of them comes first;
//  1. CustomResourceDefinitions (Helm installs a chart's crds/ before any
//     hook runs, so a hook may use the chart's own kinds);
//  2. pre-install (pre-upgrade) hooks, one step per weight, lowest first;
//  3. Namespaces; 4. ServiceAccounts and RBAC; 5. everything else;
//  6. custom resources whose CRD is in set;
//  7. post-install (post-upgrade) hooks, one step per weight.
//
// Hook objects (annotated helm.sh/hook) go only in hook steps; a hook of
// neither event of this operation (a pre-delete hook, say, or one whose
// events are all unknown) is left out, as Helm leaves it out. A hook
// listed for both the pre and the post event runs in both steps, as Helm
// runs it for each of its events: charts rely on it (ingress-nginx's
// admission ServiceAccount and RBAC, deleted once its pre-install Job
// succeeded, are created again for its post-install Job). Within a hook step objects
// are ordered by phase, kind and name; within a regular step they keep the
// order of set. Steps without objects are left out. ChartSteps does not modify
// set.
func ChartSteps(set Set, namespace string, isUpgrade bool) []Step {
	pre, post := HookPreInstall, HookPostInstall
	if isUpgrade {
		pre, post = HookPreUpgrade, HookPostUpgrade
	}
	all := slices.Concat(set.CRDs, set.Objects)
	crds := definedKinds(regularObjects(all))

	regular := map[phase][]*unstructured.Unstructured{}
	var target, preHooks, postHooks []*unstructured.Unstructured
	for _, o := range all {
		events, isHook := hookEvents(o)
		switch {
		case !isHook && isNamespace(o, namespace):
			target = append(target, o)
		case !isHook:
			p := phaseOf(o.GroupVersionKind().GroupKind(), crds)
			regular[p] = append(regular[p], o)
		default:
			if slices.Contains(events, pre) {
				preHooks = append(preHooks, o)
			}
			if slices.Contains(events, post) {
				postHooks = append(postHooks, o)
			}
		}
	}

	steps := targetStep(target)
	add := func(p phase) {
		if objs := regular[p]; len(objs) > 0 {
			steps = append(steps, Step{Name: phaseNames[p], Objects: objs, phase: p})
		}
	}
	add(phaseCRDs)
	steps = append(steps, hookSteps(pre, preHooks, crds)...)
	for _, p := range []phase{phaseNamespaces, phaseRBAC, phaseObjects, phaseCustomResources, phaseWebhooks} {
		add(p)
	}
	return append(steps, hookSteps(post, postHooks, crds)...)
}

// planHooks returns the steps of the hooks of set for event alone, as
// ChartSteps orders them, after the release's namespace when set brings it, so
// that a delete hook finds its namespace even if someone deleted it.
func planHooks(set Set, namespace string, event HookEvent) []Step {
	all := slices.Concat(set.CRDs, set.Objects)
	var target, hooks []*unstructured.Unstructured
	for _, o := range all {
		events, isHook := hookEvents(o)
		switch {
		case isHook && slices.Contains(events, event):
			hooks = append(hooks, o)
		case !isHook && isNamespace(o, namespace):
			target = append(target, o)
		}
	}
	if len(hooks) == 0 {
		return nil
	}
	return append(targetStep(target), hookSteps(event, hooks, definedKinds(regularObjects(all)))...)
}

// TargetNamespaceStep names the step that creates the release's namespace.
const TargetNamespaceStep = "target namespace"

// targetStep is the step that applies the release's namespace, or none.
func targetStep(objs []*unstructured.Unstructured) []Step {
	if len(objs) == 0 {
		return nil
	}
	return []Step{{Name: TargetNamespaceStep, Objects: objs, phase: phaseNamespaces}}
}

// isNamespace reports whether obj is the Namespace named name.
func isNamespace(obj *unstructured.Unstructured, name string) bool {
	return name != "" && obj.GroupVersionKind().GroupKind() == namespaceGK && obj.GetName() == name
}

var phaseNames = map[phase]string{
	phaseCRDs:            "CustomResourceDefinitions",
	phaseNamespaces:      "Namespaces",
	phaseRBAC:            "ServiceAccounts and RBAC",
	phaseObjects:         "objects",
	phaseCustomResources: "custom resources",
	phaseWebhooks:        "webhook configurations and APIServices",
}

// hookSteps groups hooks of one event into one step per weight, lowest
// weight first, each ordered by phase, kind and name.
func hookSteps(event HookEvent, hooks []*unstructured.Unstructured, crds crdGroupKinds) []Step {
	sorted := slices.Clone(hooks)
	slices.SortStableFunc(sorted, func(x, y *unstructured.Unstructured) int {
		return cmp.Or(
			cmp.Compare(hookWeight(x), hookWeight(y)),
			cmp.Compare(phaseOf(x.GroupVersionKind().GroupKind(), crds), phaseOf(y.GroupVersionKind().GroupKind(), crds)),
			cmp.Compare(x.GetKind(), y.GetKind()),
			cmp.Compare(x.GetName(), y.GetName()),
		)
	})
	var steps []Step
	for _, o := range sorted {
		w := hookWeight(o)
		if n := len(steps); n > 0 && steps[n-1].Weight == w {
			steps[n-1].Objects = append(steps[n-1].Objects, o)
			continue
		}
		steps = append(steps, Step{
			Name:    fmt.Sprintf("%s hooks (weight %d)", event, w),
			Hook:    event,
			Weight:  w,
			Objects: []*unstructured.Unstructured{o},
		})
	}
	return steps
}

// hookEvents returns the known events of obj's helm.sh/hook annotation,
// and whether obj is a hook at all.
func hookEvents(obj *unstructured.Unstructured) ([]HookEvent, bool) {
	value, ok := obj.GetAnnotations()[annotationHook]
	if !ok {
		return nil, false
	}
	var events []HookEvent
	for _, e := range strings.Split(value, ",") {
		switch ev := HookEvent(strings.TrimSpace(e)); ev {
		case HookPreInstall, HookPostInstall, HookPreUpgrade, HookPostUpgrade, HookPreDelete, HookPostDelete:
			events = append(events, ev)
		}
	}
	return events, true
}

// isHook reports whether obj is a Helm hook, which is never part of an
// inventory.
func isHook(obj *unstructured.Unstructured) bool {
	_, ok := hookEvents(obj)
	return ok
}

// regularObjects returns the objects of objs that are not hooks.
func regularObjects(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if !isHook(o) {
			out = append(out, o)
		}
	}
	return out
}

// hookWeight is obj's helm.sh/hook-weight; like Helm, a missing or
// malformed weight is 0.
func hookWeight(obj *unstructured.Unstructured) int {
	w, err := strconv.Atoi(strings.TrimSpace(obj.GetAnnotations()[annotationHookWeight]))
	if err != nil {
		return 0
	}
	return w
}

// deletePolicies returns obj's helm.sh/hook-delete-policy values; without
// the annotation it is before-hook-creation, as in Helm.
func deletePolicies(obj *unstructured.Unstructured) []hookDeletePolicy {
	value := strings.TrimSpace(obj.GetAnnotations()[annotationDeletePolicy])
	if value == "" {
		return []hookDeletePolicy{policyBeforeCreation}
	}
	var out []hookDeletePolicy
	for _, p := range strings.Split(value, ",") {
		out = append(out, hookDeletePolicy(strings.TrimSpace(p)))
	}
	return out
}
