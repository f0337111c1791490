package uninstall

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/target"
)

// Port is what an uninstall asks of the world; the installation
// controller implements it with the target cluster's applier, the hooks,
// the plan driver and the hub.
type Port interface {
	// Gate asks the PreUninstall hooks, and Cleanup runs the installed
	// revision's cleanup plan. Each reports false while it holds the
	// uninstall, having said why itself.
	Gate() (bool, error)
	Cleanup() (bool, error)
	// RunDeleteHooks runs the installed revision's pre-delete hooks, or
	// with post its post-delete hooks.
	RunDeleteHooks(post bool) error
	// Delete deletes refs and returns how many of them are still there.
	Delete(refs []v1alpha1.ObjectReference) (remaining int, err error)
	// Forbidden is the stop of an error that is the target cluster
	// refusing the installation's ServiceAccount; nil for any other.
	Forbidden(err error) *news.Stop
	// Health reads refs; RemoveFinalizers removes theirs.
	Health(refs []v1alpha1.ObjectReference) (target.Health, error)
	RemoveFinalizers(refs []v1alpha1.ObjectReference) error
	// DeleteRecords deletes the installation's revision records, and
	// Release its finalizer: false, with no error, when the installation
	// was already gone.
	DeleteRecords() error
	Release() (bool, error)
	// Event tells what the uninstall did.
	Event(eventType, reason, message string)
}

// Input is what one pass of an uninstall starts from.
type Input struct {
	Inst *v1alpha1.ExtensionInstallation
	// Installed is the installed revision's set as its record holds it,
	// and HaveRecord whether that record was found: without one no hook
	// and no cleanup plan runs.
	Installed  target.Set
	HaveRecord bool
	// Namespace is the installation's target namespace.
	Namespace string
	// Now is the time of this pass.
	Now time.Time
}

// Halt is where one pass of an uninstall ended.
type Halt struct {
	// Done: the objects, the records and the finalizer are gone.
	Done bool
	// Stop says why the uninstall cannot go on in this pass; nil when it
	// is done, when Gate or Cleanup held it (they said why), or when an
	// error stopped it. Polls is how many poll intervals a Stop that is
	// not retried waits before the next pass.
	Stop  *news.Stop
	Polls int
}

// Run carries out the uninstall of in.Inst as far as it goes in this
// pass, in its order: the uninstall gate, the cleanup plan and the
// pre-delete hooks (each until Started: one pass that began deleting
// ran them), the inventory but a target namespace held for post-delete
// hooks (HoldNamespace), the post-delete hooks (unless HooksRan), the
// held namespace, the records, the finalizer. Every step is idempotent,
// so the next pass resumes where this one stopped. An error is the
// port's, to retry.
func Run(in Input, port Port) (Halt, error) {
	inst := in.Inst
	if in.HaveRecord && !Started(inst) {
		if ok, err := port.Gate(); !ok || err != nil {
			return Halt{}, err
		}
		if ok, err := port.Cleanup(); !ok || err != nil {
			return Halt{}, err
		}
		if err := port.RunDeleteHooks(false); err != nil {
			return retry(v1alpha1.ReasonHookFailed, fmt.Sprintf("pre-delete hook of %s: %v", inst.Spec.Extension, err)), nil
		}
	}
	removing := fmt.Sprintf("removing the %d objects of %s %s", len(inst.Status.Inventory), inst.Spec.Extension, inst.Status.InstalledVersion)
	removed := false
	if !Started(inst) {
		// Told only when the uninstall goes on after this pass: one that
		// ends in it is told once, by Uninstalled.
		defer func() {
			if !removed {
				port.Event(corev1.EventTypeNormal, v1alpha1.ReasonUninstalling, removing)
			}
		}()
	}
	readiness.Set(inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, v1alpha1.ReasonUninstalling, removing)
	remove, held := inst.Status.Inventory, []v1alpha1.ObjectReference(nil)
	if in.HaveRecord && HasPostDeleteHooks(in.Installed) {
		remove, held = HoldNamespace(remove, in.Namespace)
	}
	if h, err := deleteAll(in, port, remove); !h.Done || err != nil {
		return h, err
	}
	if in.HaveRecord {
		ran := false
		if len(held) > 0 {
			h, err := port.Health(held)
			if err != nil {
				return retry(v1alpha1.ReasonUninstallFailed, fmt.Sprintf("reading namespace %s: %v", in.Namespace, err)), nil
			}
			ran = HooksRan(h)
		}
		if !ran {
			if err := port.RunDeleteHooks(true); err != nil {
				return retry(v1alpha1.ReasonHookFailed, fmt.Sprintf("post-delete hook of %s: %v", inst.Spec.Extension, err)), nil
			}
		}
	}
	if h, err := deleteAll(in, port, held); !h.Done || err != nil {
		return h, err
	}
	if err := port.DeleteRecords(); err != nil {
		return Halt{}, err
	}
	removed = true
	port.Event(corev1.EventTypeNormal, "Uninstalled", fmt.Sprintf("removed %d objects of %s %s",
		len(inst.Status.Inventory), inst.Spec.Extension, inst.Status.InstalledVersion))
	if released, err := port.Release(); !released || err != nil {
		return Halt{}, err
	}
	return Halt{Done: true}, nil
}

// deleteAll deletes refs and is done when none of them is left; until
// then the uninstall waits (waitForDeletion).
func deleteAll(in Input, port Port, refs []v1alpha1.ObjectReference) (Halt, error) {
	if len(refs) == 0 {
		return Halt{Done: true}, nil
	}
	remaining, err := port.Delete(refs)
	if err != nil {
		if stop := port.Forbidden(err); stop != nil {
			readiness.Set(in.Inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, stop.Reason, stop.Message)
			return Halt{Stop: stop, Polls: 30}, nil
		}
		return retry(v1alpha1.ReasonUninstallFailed, fmt.Sprintf("removing the objects of %s: %v", in.Inst.Spec.Extension, err)), nil
	}
	if remaining > 0 {
		return waitForDeletion(in, port, remaining), nil
	}
	return Halt{Done: true}, nil
}

// waitForDeletion waits for the inventory's objects to go. Custom
// resources go first and their operator stays until they are gone, so
// finalizers run. Past spec.uninstall.timeout (counted from the deletion
// request) AfterTimeout decides what to do.
func waitForDeletion(in Input, port Port, remaining int) Halt {
	inst := in.Inst
	msg := fmt.Sprintf("waiting for %d of %d objects to be deleted", remaining, len(inst.Status.Inventory))
	waiting := Halt{Stop: &news.Stop{Kind: news.Wait, Reason: v1alpha1.ReasonUninstalling, Message: msg}, Polls: 1}
	timeout := Timeout(inst)
	if in.Now.Sub(inst.DeletionTimestamp.Time) <= timeout {
		return waiting
	}
	h, err := port.Health(inst.Status.Inventory)
	if err != nil {
		return retry(v1alpha1.ReasonUninstallFailed, fmt.Sprintf("%s; reading them: %v", msg, err))
	}
	past := AfterTimeout(inst, h, timeout)
	switch {
	case len(past.Lingering) == 0:
		return waiting
	case past.RemoveFinalizers:
		if err := port.RemoveFinalizers(past.Lingering); err != nil {
			return retry(v1alpha1.ReasonUninstallFailed, fmt.Sprintf("removing the finalizers of %d objects after spec.uninstall.timeout (%s): %v", len(past.Lingering), timeout, err))
		}
		port.Event(corev1.EventTypeWarning, "FinalizersRemoved", past.Message)
		return waiting
	}
	return Halt{Stop: &news.Stop{Kind: news.Stalled, Reason: v1alpha1.ReasonFinalizersPending, Message: past.Message}, Polls: 5}
}

func retry(reason, message string) Halt {
	return Halt{Stop: &news.Stop{Kind: news.Retry, Reason: reason, Message: message}}
}
