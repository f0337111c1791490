// Package uninstall holds the decisions of an installation's uninstall,
// which the installation controller carries out (uninstall.go): whether
// an earlier reconcile already began deleting (Started), whether the
// target namespace waits for the post-delete hooks (HoldNamespace,
// HasPostDeleteHooks, HooksRan), how long deletion may take (Timeout),
// and which objects past it still wait for their finalizers (Lingering).
// The order is the controller's: the uninstall gate, the cleanup plan,
// pre-delete hooks, the inventory but a held namespace, post-delete
// hooks, the held namespace, the records, the finalizer.
package uninstall

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/target"
)

// Started reports whether an earlier reconcile already ran the
// pre-delete hooks and began deleting: its Installed condition says
// Uninstalling.
func Started(inst *v1alpha1.ExtensionInstallation) bool {
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionInstalled)
	return c != nil && c.Reason == v1alpha1.ReasonUninstalling
}

// HoldNamespace splits the Namespace ns from inventory: the target
// namespace Annex created goes after everything else, and after the
// post-delete hooks, which run in it.
func HoldNamespace(inventory []v1alpha1.ObjectReference, ns string) (rest, held []v1alpha1.ObjectReference) {
	for _, ref := range inventory {
		if ref.Group == "" && ref.Kind == "Namespace" && ref.Name == ns {
			held = append(held, ref)
			continue
		}
		rest = append(rest, ref)
	}
	return rest, held
}

// HasPostDeleteHooks reports whether set holds Helm post-delete hooks.
func HasPostDeleteHooks(set target.Set) bool {
	for _, o := range set.Objects {
		for _, event := range strings.Split(o.GetAnnotations()["helm.sh/hook"], ",") {
			if strings.TrimSpace(event) == "post-delete" {
				return true
			}
		}
	}
	return false
}

// HooksRan reports, from the health of the held target namespace,
// whether the post-delete hooks already ran: the namespace is deleted
// right after them, so a namespace being deleted, or gone, says they did
// (or that it went by hand, and its hooks with it).
func HooksRan(held target.Health) bool {
	for _, o := range held.NotReady {
		if o.Status == "Terminating" || o.Status == "NotFound" {
			return true
		}
	}
	return false
}

// Timeout is spec.uninstall.timeout, or def when unset.
func Timeout(inst *v1alpha1.ExtensionInstallation, def time.Duration) time.Duration {
	if t := inst.Spec.Uninstall.Timeout.Duration; t > 0 {
		return t
	}
	return def
}

// Lingering returns the objects of h still being deleted (their
// finalizers hold them), and each named with what it waits for, for a
// person to see why.
func Lingering(h target.Health) (refs []v1alpha1.ObjectReference, named []string) {
	for _, o := range h.NotReady {
		if o.Status == "Terminating" {
			refs = append(refs, o.Object)
			name := o.Object.Name
			if o.Object.Namespace != "" {
				name = o.Object.Namespace + "/" + name
			}
			named = append(named, fmt.Sprintf("%s %s: %s", o.Object.Kind, name, o.Message))
		}
	}
	return refs, named
}
