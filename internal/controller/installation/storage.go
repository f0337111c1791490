package installation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/crdcheck"
	"github.com/annex-platform/annex/internal/fleet"
)

// migrateStorage retires the old stored versions of the CRDs the
// installation owns, once it is healthy: for each CRD of the inventory
// whose status.storedVersions lists a version besides its storage version
// (an upgrade moved the storage version, or the CRD came so), every
// object of it is written back at the storage version and the old
// versions are trimmed (Target.MigrateStoredVersions). A later upgrade
// may then drop those versions, which the CRD gate (gate.Run) refuses while they are
// listed. The CRDs' own status is the record: a migration cut short by a
// crash or an error runs again from the start on the next reconcile.
// Costs one read per CRD of the inventory when nothing is to migrate.
func (r *Reconciler) migrateStorage(ctx context.Context, s *scope) (ctrl.Result, error) {
	names := crdcheck.InInventory(s.applied.inventory)
	if len(names) == 0 {
		return ctrl.Result{}, nil
	}
	installed, err := s.target.CRDs(ctx, names)
	if err != nil {
		s.block = retry(v1alpha1.ReasonClusterUnavailable, fmt.Sprintf("reading the CustomResourceDefinitions installed on %s: %v", fleet.ClusterName(s.inst.Spec.Cluster), err))
		return ctrl.Result{}, s.block
	}
	for _, m := range crdcheck.ToMigrate(names, installed) {
		done, err := s.target.MigrateStoredVersions(ctx, m.Name)
		if err != nil {
			s.block = retry(v1alpha1.ReasonStorageMigrationFailed, m.FailedMessage(err))
			return ctrl.Result{}, s.block
		}
		if len(done.Trimmed) > 0 {
			r.event(s, corev1.EventTypeNormal, "StorageMigrated", crdcheck.MigratedMessage(m.Name, done.Objects, done.StorageVersion, done.Trimmed))
		}
	}
	return ctrl.Result{}, nil
}
