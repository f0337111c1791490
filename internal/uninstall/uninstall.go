// Package uninstall holds an installation's uninstall: its order, as a
// sequence resumed on every pass (Run), and its decisions: whether
// an earlier reconcile already began deleting (Started), whether the
// target namespace waits for the post-delete hooks (HoldNamespace,
// HasPostDeleteHooks, HooksRan), how long deletion may take (Timeout),
// which objects past it still wait for their finalizers (Lingering) and
// what is done about them (AfterTimeout), and what a held deletion says
// (HeldMessage). The order is the uninstall gate, the cleanup plan,
// pre-delete hooks, the inventory but a held namespace, post-delete
// hooks, the held namespace, the records, the finalizer; the I/O of each
// step is behind Port, which the installation controller implements
// (uninstall.go).
package uninstall

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/fleet"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/readiness"
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

// Timeout is spec.uninstall.timeout, or readiness.DefaultTimeout when
// unset.
func Timeout(inst *v1alpha1.ExtensionInstallation) time.Duration {
	if t := inst.Spec.Uninstall.Timeout.Duration; t > 0 {
		return t
	}
	return readiness.DefaultTimeout
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

// PastTimeout is what an uninstall that waited longer than
// spec.uninstall.timeout does about the objects still being deleted.
type PastTimeout struct {
	// Lingering are the objects whose finalizers still hold them; none:
	// the uninstall just keeps waiting.
	Lingering []v1alpha1.ObjectReference
	// RemoveFinalizers: spec.uninstall.onTimeout is RemoveFinalizers, so
	// their finalizers are removed and deletion goes on; Message is then
	// the Event telling it. Otherwise the installation is Stalled and
	// keeps waiting, and Message is why and what to do.
	RemoveFinalizers bool
	Message          string
}

// AfterTimeout decides, from h (the inventory's health), what an
// uninstall of inst past its timeout does: objects still being deleted
// are named with the finalizers they wait for.
func AfterTimeout(inst *v1alpha1.ExtensionInstallation, h target.Health, timeout time.Duration) PastTimeout {
	lingering, named := Lingering(h)
	if len(lingering) == 0 {
		return PastTimeout{}
	}
	if inst.Spec.Uninstall.OnTimeout == v1alpha1.UninstallRemoveFinalizers {
		return PastTimeout{Lingering: lingering, RemoveFinalizers: true, Message: fmt.Sprintf(
			"removed the finalizers of %s after spec.uninstall.timeout (%s), as spec.uninstall.onTimeout says; what they guarded was not cleaned up",
			strings.Join(named, "; "), timeout)}
	}
	return PastTimeout{Lingering: lingering, Message: fmt.Sprintf(
		"deletion has waited more than spec.uninstall.timeout (%s) for %s; the operator that owns them is kept until they are gone — see why it does not finish them (its logs, the resources' events), "+
			"or set spec.uninstall.onTimeout: RemoveFinalizers to remove the finalizers and go on (what they guard is then not cleaned up)",
		timeout, strings.Join(named, "; "))}
}

// HeldMessage says why the deletion of inst waits: held names the
// installations that still need it.
func HeldMessage(inst *v1alpha1.ExtensionInstallation, held []string) string {
	return fmt.Sprintf("deletion held: %s still needed by %s; delete those first, or together with this one (dependents are uninstalled first)",
		inst.Spec.Extension, strings.Join(held, ", "))
}

// Unreachable is how the uninstall of inst stops when its cluster cannot
// be reached (err): retried, and the installation is kept until its
// objects are removed.
func Unreachable(inst *v1alpha1.ExtensionInstallation, err error) *news.Stop {
	return &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonUninstallFailed, Message: fmt.Sprintf(
		"spec.cluster: cannot reach %s to remove %d objects: %v; the installation is kept until they are removed: check the ManagedCluster and its kubeconfig Secret",
		fleet.ClusterName(inst.Spec.Cluster), len(inst.Status.Inventory), err)}
}
