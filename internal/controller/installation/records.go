package installation

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/record"
	"github.com/annex-platform/annex/internal/target"
)

// Revision records, and why a crash at any instant orphans nothing.
//
// The invariant: every object Annex applied for an installation is listed,
// from before its first write until it is deleted, in the status inventory
// or in a record the status has not recorded yet. It holds because:
//
//  1. A revision's record is written before the first object of it is
//     applied (writeIntent), and never changed afterwards: no attempt
//     overwrites another's record.
//  2. A revision number is never reused for different content. The next
//     number is one above the revision the status records; when a record
//     already has it, it was left by an attempt the status never recorded
//     (a crash, or a failed apply), and the new attempt takes the number
//     above every such leftover. Only an attempt at exactly the same
//     content (version, values, manifests, inventory) takes over the
//     highest leftover as its own.
//  3. Records above the recorded revision are taken over before anything
//     is pruned or deleted: an apply or rollback adds their inventories to
//     the status inventory (so its prune removes what the new revision
//     dropped), an uninstall deletes what they list.
//  4. A record is deleted only when a written status supersedes it: it
//     fell out of the kept history (trimRecords), or it is a leftover that
//     an apply took over, deleted after the status recording that apply
//     is written (deleteSuperseded). Until then a second crash finds it.
//  5. A large record keeps its rendered set in pieces (Secrets named after
//     their content, shared by every record of the namespace with the same
//     bytes, owned by each installation using them). The index is written
//     before its pieces are attached and deleted after they are released,
//     so a piece an installation owns is referenced by one of its records;
//     the inventory is always in the index, so a takeover never needs a
//     piece.

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// recordStore returns the store of inst's records: it reads through the
// uncached Reader and writes through Client.
func (r *Reconciler) recordStore(inst *v1alpha1.ExtensionInstallation) *record.Store {
	return record.NewStore(r.Client, r.Reader, inst)
}

// maxLeftoverRecords bounds how many unrecorded attempts an installation
// can pile up; each needs a crash or a failed apply.
const maxLeftoverRecords = 1000

// errStaleView stops a reconcile that read the installation before its own
// last status write reached the cache: it would take a recorded revision
// for a crashed one.
var errStaleView = errors.New("the installation changed since it was read; reconciling it again")

// writeIntent records revision rev before any object of it is applied: a
// Secret owned by the installation gets the rendered set, hooks included,
// and the inventory about to be applied (see the invariant above). It may
// give rev another number (rule 2). The status inventory grows by the
// planned inventory and by every leftover's, so that a failing apply
// records everything it may have touched; the status itself is written
// once, when the apply is done.
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
	store := r.recordStore(s.inst)
	planned := s.target.Applier().Refs(everything, s.targetNamespace())
	enc, err := record.Encode(newRecord(*rev, planned, set, s.artifact.adoption.recordOf()))
	if err == nil {
		err = store.Create(ctx, rev.Number, enc.Index)
	}
	if apierrors.IsAlreadyExists(err) {
		var reused bool
		if reused, err = r.takeOverLeftovers(ctx, s, store, rev, planned); err == nil && !reused {
			if enc, err = record.Encode(newRecord(*rev, planned, set, s.artifact.adoption.recordOf())); err == nil {
				err = store.Create(ctx, rev.Number, enc.Index)
			}
		}
	}
	if err != nil {
		return r.recordRefused(s, rev, err)
	}
	failpoint.Hit(failpoint.AfterRecordIndex, s.owner().String())
	if err := store.Attach(ctx, enc.Pieces); err != nil {
		return fmt.Errorf("writing the pieces of the record of revision %d: %w", rev.Number, err)
	}
	s.records.pieces = make([]string, 0, len(enc.Pieces))
	for _, p := range enc.Pieces {
		s.records.pieces = append(s.records.pieces, p.Digest)
	}
	s.inst.Status.Inventory, _ = target.UnionRefs(s.inst.Status.Inventory, planned)
	s.inst.Status.InventoryCount = int32(len(s.inst.Status.Inventory))
	return nil
}

// newRecord is the record of rev: planned is the inventory it is about to
// apply, set its rendered set, adopted what it adopts (nil for none).
func newRecord(rev v1alpha1.Revision, planned []v1alpha1.ObjectReference, set target.Set, adopted *record.Adopted) record.Record {
	return record.Record{
		Revision: rev.Number, Version: rev.Version,
		ValuesDigest: rev.ValuesDigest, ManifestDigest: rev.ManifestDigest,
		Inventory: planned, CRDs: set.CRDs, Objects: set.Objects,
		Package: set.Package, Adopted: adopted,
	}
}

// errRecordRefused: the record cannot be stored; s.block says why.
var errRecordRefused = errors.New("the revision record cannot be stored")

// recordRefused turns a failure to store a record into a terminal block
// when retrying cannot help (the record is too large, or the API server
// refuses the Secret as invalid), or into a retried error.
func (r *Reconciler) recordRefused(s *scope, rev *v1alpha1.Revision, err error) error {
	var tooLarge *record.TooLargeError
	if !errors.As(err, &tooLarge) && !apierrors.IsInvalid(err) && !apierrors.IsRequestEntityTooLargeError(err) {
		if errors.Is(err, errStaleView) {
			s.outcome.stale = true
			return err
		}
		return fmt.Errorf("writing the record of revision %d: %w", rev.Number, err)
	}
	s.block = terminal(v1alpha1.ReasonRecordTooLarge, fmt.Sprintf(
		"cannot record revision %d of %s %s: %v; render less (check spec.values) or choose another version with spec.version",
		rev.Number, s.inst.Spec.Extension, rev.Version, err))
	setCondition(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, s.block.reason, s.block.message)
	return errRecordRefused
}

// takeOverLeftovers is called when the record of rev.Number exists. After
// checking that the reconcile's view of the installation is current, it
// adds the inventory of every record above the recorded revision to the
// status inventory and gives rev the number above all of them — unless
// the highest holds exactly rev's content, which rev then takes as its own
// (reused). The leftovers are kept in s.records.superseded, to be
// deleted once the status recording rev is written.
func (r *Reconciler) takeOverLeftovers(ctx context.Context, s *scope, store *record.Store, rev *v1alpha1.Revision, planned []v1alpha1.ObjectReference) (reused bool, err error) {
	inst := s.inst
	fresh := &v1alpha1.ExtensionInstallation{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(inst), fresh); err != nil {
		return false, err
	}
	if fresh.ResourceVersion != inst.ResourceVersion {
		return false, errStaleView
	}
	records, err := store.List(ctx)
	if err != nil {
		return false, err
	}
	s.records.listed = records
	recorded := recordedRevision(inst)
	var leftovers []record.Stored
	for _, rec := range records {
		if rec.Number <= recorded {
			continue
		}
		if ix, err := rec.Index(); err == nil {
			inst.Status.Inventory, _ = target.UnionRefs(inst.Status.Inventory, ix.Inventory)
		}
		// An undecodable record is superseded all the same: its objects
		// carry this installation's labels, and nothing better is known.
		leftovers = append(leftovers, rec)
	}
	if len(leftovers) == 0 {
		// The name is taken although no record above the recorded
		// revision exists: a Secret that is not an Annex record has it,
		// or the view is stale after all.
		if err := store.CheckName(ctx, rev.Number); err != nil {
			return false, err
		}
		return false, errStaleView
	}
	if len(leftovers) > maxLeftoverRecords {
		return false, fmt.Errorf("%d records of attempts that never completed; delete the Secrets annex.%s.v* above v%d by hand",
			len(leftovers), store.Stem(), recorded)
	}
	highest := leftovers[0] // List sorts newest first
	if ix, err := highest.Index(); err == nil && sameContent(ix, *rev, planned) {
		rev.Number = highest.Number
		s.records.superseded = leftovers[1:]
		return true, nil
	}
	rev.Number = highest.Number + 1
	s.records.superseded = leftovers
	return false, nil
}

// recordedRevision is the number of the revision the status records, 0
// before the first.
func recordedRevision(inst *v1alpha1.ExtensionInstallation) int64 {
	if len(inst.Status.History) == 0 {
		return 0
	}
	return inst.Status.History[0].Number
}

// sameContent reports whether a record holds exactly what rev would.
func sameContent(ix record.Index, rev v1alpha1.Revision, planned []v1alpha1.ObjectReference) bool {
	if ix.Version != rev.Version || ix.ValuesDigest != rev.ValuesDigest || ix.ManifestDigest != rev.ManifestDigest ||
		len(ix.Inventory) != len(planned) {
		return false
	}
	_, grew := target.UnionRefs(ix.Inventory, planned)
	return !grew
}

// deleteSuperseded deletes the leftovers an apply took over, once the
// status recording that apply is written (rule 4). A failure is logged by
// the caller and left to trimRecords.
func (r *Reconciler) deleteSuperseded(ctx context.Context, s *scope) error {
	if len(s.records.superseded) == 0 {
		return nil
	}
	doomed := s.records.superseded
	s.records.superseded = nil
	var survivors []record.Stored
	for _, rec := range s.records.listed {
		if !slices.ContainsFunc(doomed, func(d record.Stored) bool { return d.Number == rec.Number }) {
			survivors = append(survivors, rec)
		}
	}
	return r.recordStore(s.inst).Delete(ctx, doomed, survivors, s.records.pieces)
}

// trimRecords deletes the records the history no longer keeps, once
// revision n is recorded.
func (r *Reconciler) trimRecords(ctx context.Context, s *scope, n int64) error {
	upTo := n - int64(r.historyLimit())
	if upTo <= 0 {
		return nil
	}
	store := r.recordStore(s.inst)
	records, err := store.List(ctx)
	if err != nil {
		return err
	}
	var doomed, survivors []record.Stored
	for _, rec := range records {
		if rec.Number <= upTo {
			doomed = append(doomed, rec)
		} else {
			survivors = append(survivors, rec)
		}
	}
	return store.Delete(ctx, doomed, survivors, s.records.pieces)
}

// recordOf returns the rendered set of revision n, if its record exists.
func (r *Reconciler) recordOf(ctx context.Context, inst *v1alpha1.ExtensionInstallation, n int64) (target.Set, bool, error) {
	rec, found, err := r.recordStore(inst).Read(ctx, n)
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

// installedState is the set and package record of the installed revision.
type installedState struct {
	revision int64
	found    bool
	crds     []*unstructured.Unstructured // a chart's crds/ folder
	objects  []*unstructured.Unstructured
	pkg      []byte
}

// installedState reads the installed revision's record once per
// reconcile (render, the start of a revision and the drift check all need
// it); empty on install.
func (r *Reconciler) installedState(ctx context.Context, s *scope) (installedState, error) {
	if len(s.inst.Status.History) == 0 {
		return installedState{}, nil
	}
	n := s.inst.Status.History[0].Number
	if s.records.installed != nil && s.records.installed.revision == n {
		return *s.records.installed, nil
	}
	set, found, err := r.recordOf(ctx, s.inst, n)
	if err != nil {
		return installedState{}, err
	}
	s.records.installed = &installedState{revision: n, found: found, crds: set.CRDs, objects: set.Objects, pkg: set.Package}
	return *s.records.installed, nil
}
