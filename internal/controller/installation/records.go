package installation

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/record"
	"github.com/annex-platform/annex/internal/target"
)

// Revision records: internal/record's Keeper writes, takes over and
// deletes them under the invariant that a crash at any instant orphans
// nothing (see there); the controller says when.

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// records returns this reconcile's keeper of the installation's records.
func (r *Reconciler) records(s *scope) *record.Keeper {
	if s.records.keeper == nil {
		s.records.keeper = record.NewKeeper(r.Client, r.Reader, s.inst)
	}
	return s.records.keeper
}

// writeIntent records revision rev before any object of it is applied
// (record.Keeper.WriteIntent): its record holds set, hooks included, and
// the inventory about to be applied. It may give rev another number. The
// status itself is written once, when the apply is done.
//
// A record that cannot be stored at its size sets a terminal block and
// returns errRecordRefused.
func (r *Reconciler) writeIntent(ctx context.Context, s *scope, rev *v1alpha1.Revision, set target.Set) error {
	return r.writeIntentWith(ctx, s, rev, set, slices.Concat(set.CRDs, set.Objects))
}

// writeIntentWith is writeIntent for a set whose apply may touch more
// than the set holds: a package's plans may apply objects that a later
// step deletes again. The record's inventory lists everything.
func (r *Reconciler) writeIntentWith(ctx context.Context, s *scope, rev *v1alpha1.Revision, set target.Set, everything []*unstructured.Unstructured) error {
	planned := s.target.Applier().Refs(everything, s.targetNamespace())
	err := r.records(s).WriteIntent(ctx, rev, record.Record{
		Inventory: planned, CRDs: set.CRDs, Objects: set.Objects, Package: set.Package, Adopted: record.AdoptedBy(s.artifact.adoption),
	})
	if err != nil {
		return r.recordRefused(s, rev, err)
	}
	return nil
}

// errRecordRefused: the record cannot be stored; s.block says why.
var errRecordRefused = errors.New("the revision record cannot be stored")

// recordRefused turns a failure to store a record into a terminal block
// when retrying cannot help (the record is too large, or the API server
// refuses the Secret as invalid), or into a retried error.
func (r *Reconciler) recordRefused(s *scope, rev *v1alpha1.Revision, err error) error {
	if b := record.RefusedStop(s.inst, rev, err); b != nil {
		s.block = b
		readiness.Set(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, s.block.Reason, s.block.Message)
		return errRecordRefused
	}
	if errors.Is(err, record.ErrStaleView) {
		s.outcome.stale = true
		return err
	}
	return fmt.Errorf("writing the record of revision %d: %w", rev.Number, err)
}

// trimRecords deletes the records the history no longer keeps, once
// revision n is recorded.
func (r *Reconciler) trimRecords(ctx context.Context, s *scope, n int64) error {
	return r.records(s).Trim(ctx, n, r.historyLimit())
}

// recordOf returns the rendered set of revision n, if its record exists.
func (r *Reconciler) recordOf(ctx context.Context, inst *v1alpha1.ExtensionInstallation, n int64) (target.Set, bool, error) {
	rec, found, err := record.NewKeeper(r.Client, r.Reader, inst).Read(ctx, n)
	return setOf(rec), found, err
}

// setOf is the rendered set a record holds.
func setOf(rec record.Record) target.Set {
	return target.Set{CRDs: rec.CRDs, Objects: rec.Objects, Package: rec.Package}
}

// ignoreRefused hides errRecordRefused, whose block already says what to
// do, from controller-runtime's retries.
func ignoreRefused(err error) error {
	if errors.Is(err, errRecordRefused) {
		return nil
	}
	return err
}
