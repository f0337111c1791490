package gate

// This file holds what the hooks gate decides without asking anyone:
// which Hooks judge a change, what a hook's resource answered, what a
// failurePolicy makes of an answer, the verdict of all the answers, and
// the names and input of what Annex creates to ask. The asking itself —
// the HookRequest, the hooks' resources, their watches — is I/O, in
// internal/hookrequest; the contract a hook implements is the API's
// (api/v1alpha1 Hook).

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

// HookChange is a change as the hooks are asked about it.
type HookChange struct {
	// Installation is the installation the change is for: it selects the
	// Hooks (SelectHooks), owns the HookRequest, and its status.change
	// gives the permissions' growth when it describes this change.
	Installation *v1alpha1.ExtensionInstallation
	// Event is a v1alpha1.HookEvent: PreInstall, PreUpgrade or
	// PreUninstall.
	Event string
	// From is the installed version ("" for an install), To the version
	// the change applies ("" for an uninstall).
	From, To string
	// ArtifactDigest identifies the artifact the objects come from.
	ArtifactDigest string
	// Digest identifies the change: one HookRequest per digest.
	Digest string
	// Objects are everything the change may apply (or, for an uninstall,
	// delete).
	Objects []*unstructured.Unstructured
	// TargetNamespace is the namespace the objects go to by default.
	TargetNamespace string
}

// HookOutcome is what the hooks said of a change.
type HookOutcome struct {
	// Request names the HookRequest that asked them; "" when no Hook
	// selects the change: nothing was asked, and the change goes on.
	Request string
	// State is the verdict (HookVerdict): Succeeded, Failed or Pending.
	State v1alpha1.HookState
	// Message says what the hooks said, in HookVerdict's words.
	Message string
	// Deadline is the earliest timeout of a hook still pending; zero when
	// none is.
	Deadline time.Time
}

// Summary is status.change.hooks for o.
func (o HookOutcome) Summary() *v1alpha1.HooksSummary {
	return &v1alpha1.HooksSummary{Request: o.Request, State: o.State, Message: o.Message}
}

// Refusal says, for a change of event that the hooks refused (State
// Failed), what the hooks said, what the change waits for, and how to ask
// them again.
func (o HookOutcome) Refusal(event string) string {
	next := "the change waits until the hook answers otherwise or the change's content changes (spec.values, spec.version)"
	if event == EventPreUninstall {
		next = "the uninstall waits until the hook answers otherwise"
	}
	return fmt.Sprintf("%s; %s; delete HookRequest %s to ask the hooks again", o.Message, next, o.Request)
}

// RecheckAfter is how long, from now, a change the hooks have not
// answered waits before it is looked at again: until the first pending
// hook's deadline, at least 100ms; zero without a deadline (the hooks'
// answers wake it).
func (o HookOutcome) RecheckAfter(now time.Time) time.Duration {
	if o.Deadline.IsZero() {
		return 0
	}
	return max(o.Deadline.Sub(now), 100*time.Millisecond)
}

// SelectHooks returns the names of the Hooks that judge event for inst,
// in the order they run: by spec.order, then by name. A Hook being
// deleted judges nothing.
func SelectHooks(hooks []v1alpha1.Hook, inst *v1alpha1.ExtensionInstallation, event string) []string {
	var selected []*v1alpha1.Hook
	for i := range hooks {
		h := &hooks[i]
		if h.DeletionTimestamp.IsZero() && slices.Contains(h.Spec.Events, v1alpha1.HookEvent(event)) && hookSelects(h.Spec.Selector, inst) {
			selected = append(selected, h)
		}
	}
	slices.SortFunc(selected, func(a, b *v1alpha1.Hook) int {
		return cmp.Or(cmp.Compare(a.Spec.Order, b.Spec.Order), cmp.Compare(a.Name, b.Name))
	})
	names := make([]string, len(selected))
	for i, h := range selected {
		names[i] = h.Name
	}
	return names
}

// hookSelects reports whether sel selects inst: every field given must
// match. An invalid label selector selects nothing.
func hookSelects(sel v1alpha1.HookSelector, inst *v1alpha1.ExtensionInstallation) bool {
	if len(sel.Extensions) > 0 && !slices.Contains(sel.Extensions, inst.Spec.Extension) {
		return false
	}
	if len(sel.Clusters) > 0 && !slices.Contains(sel.Clusters, cmp.Or(inst.Spec.Cluster, v1alpha1.HubClusterName)) {
		return false
	}
	if sel.Installations != nil {
		ls, err := metav1.LabelSelectorAsSelector(sel.Installations)
		if err != nil || !ls.Matches(labels.Set(inst.Labels)) {
			return false
		}
	}
	return true
}

// HookAnswer reads a hook resource's answer from its status conditions:
// Failed=True or Succeeded=False refuse, Succeeded=True agrees; failing
// those, a kstatus Ready=True agrees and Ready=False refuses unless
// Reconciling=True. Anything else is no answer yet (Pending). The
// message is the deciding condition's message, or else its reason.
func HookAnswer(obj *unstructured.Unstructured) (v1alpha1.HookState, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	find := func(t string) (status, msg string) {
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["type"] != t {
				continue
			}
			status, _ = m["status"].(string)
			msg, _ = m["message"].(string)
			if msg == "" {
				msg, _ = m["reason"].(string)
			}
			return status, msg
		}
		return "", ""
	}
	if st, msg := find(v1alpha1.ConditionFailed); st == string(metav1.ConditionTrue) {
		return v1alpha1.HookFailed, msg
	}
	switch st, msg := find(v1alpha1.ConditionSucceeded); st {
	case string(metav1.ConditionTrue):
		return v1alpha1.HookSucceeded, msg
	case string(metav1.ConditionFalse):
		return v1alpha1.HookFailed, msg
	}
	switch st, msg := find(v1alpha1.ConditionReady); st {
	case string(metav1.ConditionTrue):
		return v1alpha1.HookSucceeded, msg
	case string(metav1.ConditionFalse):
		if rec, _ := find(v1alpha1.ConditionReconciling); rec != string(metav1.ConditionTrue) {
			return v1alpha1.HookFailed, msg
		}
	}
	return v1alpha1.HookPending, ""
}

// DecideHook records an answer (Succeeded, Failed or TimedOut) in res
// as the Hook's failurePolicy reads it: under Ignore, anything but
// Succeeded becomes Ignored, its message saying what it was.
func DecideHook(hook *v1alpha1.Hook, res v1alpha1.HookResult, state v1alpha1.HookState, msg string) v1alpha1.HookResult {
	res.State, res.Message = state, msg
	if state != v1alpha1.HookSucceeded && hook.Spec.FailurePolicy == v1alpha1.HookIgnore {
		res.State, res.Message = v1alpha1.HookIgnored, fmt.Sprintf("%s: %s (ignored: failurePolicy Ignore)", state, msg)
	}
	return res
}

// HookNotServed records in res that the hook's resource cannot be made
// (msg says why): under Fail the change waits — Pending, with no
// timeout running, for the hook was never asked — until the Hook's kind
// is served; under Ignore it is Ignored and the change goes on.
func HookNotServed(hook *v1alpha1.Hook, res v1alpha1.HookResult, msg string) v1alpha1.HookResult {
	if hook.Spec.FailurePolicy == v1alpha1.HookIgnore {
		res.State, res.Message = v1alpha1.HookIgnored, msg+" (ignored: failurePolicy Ignore)"
		return res
	}
	res.State, res.Message = v1alpha1.HookPending, msg
	return res
}

// HookVerdict aggregates the hooks' states: Failed names the first hook
// that holds the change with its own message; Pending names the hooks
// waited for; Succeeded when every hook succeeded or was ignored. hooks
// are the Hooks that exist: the failure of a Hook deleted since no
// longer holds the change.
func HookVerdict(results []v1alpha1.HookResult, hooks map[string]*v1alpha1.Hook) (v1alpha1.HookState, string) {
	var waiting, agreed, ignored []string
	for _, res := range results {
		_, exists := hooks[res.Name]
		switch res.State {
		case v1alpha1.HookFailed, v1alpha1.HookTimedOut:
			switch {
			case !exists:
				ignored = append(ignored, res.Name)
			case res.State == v1alpha1.HookFailed:
				return v1alpha1.HookFailed, fmt.Sprintf("hook %s refused the change: %s", res.Name, res.Message)
			default:
				return v1alpha1.HookFailed, fmt.Sprintf("hook %s %s (failurePolicy Fail)", res.Name, res.Message)
			}
		case v1alpha1.HookPending, v1alpha1.HookWaiting:
			waiting = append(waiting, fmt.Sprintf("hook %s: %s", res.Name, res.Message))
		case v1alpha1.HookSucceeded:
			agreed = append(agreed, res.Name)
		default:
			ignored = append(ignored, res.Name)
		}
	}
	if len(waiting) > 0 {
		return v1alpha1.HookPending, "waiting for " + strings.Join(waiting, "; ")
	}
	var said []string
	if len(agreed) > 0 {
		said = append(said, "agreed: "+strings.Join(agreed, ", "))
	}
	if len(ignored) > 0 {
		said = append(said, "ignored: "+strings.Join(ignored, ", "))
	}
	return v1alpha1.HookSucceeded, "hooks " + strings.Join(said, "; ")
}

// HookRequestName is "<installation>-<event>-<first 10 hex digits of the
// change digest>", shortened with a hash when too long for an object
// name.
func HookRequestName(installation, event, digest string) string {
	sum := strings.TrimPrefix(digest, "sha256:")
	if len(sum) > 10 {
		sum = sum[:10]
	}
	return names.Bounded(installation+"-"+strings.ToLower(event)+"-"+sum, names.MaxSubdomain)
}

// HookInput is spec.annex of the resources that ask the hooks about c
// (the same for every hook): the change, objects (where its objects
// are stored), the images they run, every permission they give, and,
// when the installation's status.change describes c, how they grow and
// shrink against the installed revision.
func HookInput(c HookChange, objects v1alpha1.SecretKeyReference) v1alpha1.HookInput {
	inst := c.Installation
	in := v1alpha1.HookInput{
		Installation: v1alpha1.NamespacedName{Namespace: inst.Namespace, Name: inst.Name},
		Cluster:      inst.Spec.Cluster, Extension: inst.Spec.Extension,
		Event: v1alpha1.HookEvent(c.Event), FromVersion: c.From, ToVersion: c.To,
		ArtifactDigest: c.ArtifactDigest, Digest: c.Digest, Objects: objects,
		Images:      imagesOf(c.Objects),
		Permissions: v1alpha1.HookPermissions{All: Diff(Permissions{}, Derive(c.Objects, c.TargetNamespace)).Grows},
	}
	if pc := inst.Status.Change; pc != nil && pc.Digest == c.Digest {
		in.Permissions.Grows, in.Permissions.Shrinks = pc.PermissionsGrow, pc.PermissionsShrink
	}
	return in
}

// podSpecPaths are where the kinds that run containers keep their pod
// spec.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// imagesOf returns the container images of objs — containers, init and
// ephemeral containers of Pods and of workloads' pod templates — sorted
// and unique, as written.
func imagesOf(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		path, ok := podSpecPaths[o.GetKind()]
		if !ok {
			continue
		}
		spec, found, _ := unstructured.NestedMap(o.Object, path...)
		if !found {
			continue
		}
		for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
			containers, _, _ := unstructured.NestedSlice(spec, field)
			for _, c := range containers {
				if m, ok := c.(map[string]any); ok {
					if image, ok := m["image"].(string); ok && image != "" {
						out = append(out, image)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
