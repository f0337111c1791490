package profile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// describe says what an action a profile carried out did, for an Event
// on the profile: created, updated (Enforced) or removed installations.
// ok is false for actions that are no news: recording a Default
// extension, or removing an installation already being deleted.
func describe(p *v1alpha1.ExtensionProfile, a action) (reason, message string, ok bool) {
	ns := namespaceOf(p)
	switch a.kind {
	case actCreate:
		return "InstallationCreated", fmt.Sprintf("created ExtensionInstallation %s/%s: %s (%s) on cluster %s",
			ns, a.name, a.want.ext.Name, a.want.ext.Mode, clusterLabel(a.want.cluster)), true
	case actUpdate:
		return "InstallationUpdated", fmt.Sprintf("set ExtensionInstallation %s/%s back to the profile's %s on cluster %s (Enforced)",
			ns, a.name, a.want.ext.Name, clusterLabel(a.want.cluster)), true
	case actRemove:
		if a.existing == nil || !a.existing.DeletionTimestamp.IsZero() {
			return "", "", false
		}
		how := "deleted (it uninstalls)"
		if p.Spec.RemovalPolicy == v1alpha1.DeletionPolicyOrphan {
			how = "released (removalPolicy Orphan: what it installed stays)"
		}
		return "InstallationRemoved", fmt.Sprintf("ExtensionInstallation %s/%s of %s on cluster %s left the profile: %s",
			ns, a.name, a.existing.Spec.Extension, clusterLabel(a.existing.Spec.Cluster), how), true
	}
	return "", "", false
}

// tell records, in an Event on the profile and in the log, what a carried
// out action did.
func (r *Reconciler) tell(ctx context.Context, p *v1alpha1.ExtensionProfile, a action) {
	reason, message, ok := describe(p, a)
	if !ok {
		return
	}
	log.FromContext(ctx).Info(message, "event", reason, "installation", namespaceOf(p)+"/"+a.name)
	if r.Events != nil {
		r.Events.Eventf(p, nil, corev1.EventTypeNormal, reason, "Reconcile", "%s", message)
	}
}
