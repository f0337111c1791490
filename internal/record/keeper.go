package record

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/target"
)

// Revision records, and why a crash at any instant orphans nothing.
//
// The invariant: every object Annex applied for an installation is listed,
// from before its first write until it is deleted, in the status inventory
// or in a record the status has not recorded yet. It holds because:
//
//  1. A revision's record is written before the first object of it is
//     applied (Keeper.WriteIntent), and never changed afterwards: no
//     attempt overwrites another's record.
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
//     dropped), an uninstall deletes what they list (Keeper.Uninstalling).
//  4. A record is deleted only when a written status supersedes it: it
//     fell out of the kept history (Keeper.Trim), or it is a leftover that
//     an apply took over, deleted after the status recording that apply
//     is written (Keeper.DeleteSuperseded). Until then a second crash
//     finds it.
//  5. A large record keeps its rendered set in pieces (Secrets named after
//     their content, shared by every record of the namespace with the same
//     bytes, owned by each installation using them). The index is written
//     before its pieces are attached and deleted after they are released,
//     so a piece an installation owns is referenced by one of its records;
//     the inventory is always in the index, so a takeover never needs a
//     piece.

// Keeper keeps one installation's records for one reconcile under the
// invariant above: it writes a revision's intent, takes over the
// leftovers of attempts the status never recorded, and deletes the
// records a written status superseded. It changes the installation's
// status inventory (the object it was made with) as the invariant
// requires, and writes no status itself: the controller writes it, then
// calls DeleteSuperseded.
type Keeper struct {
	store *Store
	inst  *v1alpha1.ExtensionInstallation
	// listed are the records a takeover listed; superseded the leftovers
	// it superseded (deleted once the status recording this apply is
	// written); pieces the pieces of the record this reconcile wrote.
	listed     []Stored
	superseded []Stored
	pieces     []string
	// installed is the installed revision's record, once read.
	installed *installedRecord
}

// installedRecord is the record of revision n, found or not.
type installedRecord struct {
	n     int64
	rec   Record
	found bool
}

// NewKeeper returns the keeper of inst's records for one reconcile: it
// reads through the uncached reader and writes through c.
func NewKeeper(c client.Client, reader client.Reader, inst *v1alpha1.ExtensionInstallation) *Keeper {
	return &Keeper{store: NewStore(c, reader, inst), inst: inst}
}

// maxLeftoverRecords bounds how many unrecorded attempts an installation
// can pile up; each needs a crash or a failed apply.
const maxLeftoverRecords = 1000

// ErrStaleView stops a reconcile that read the installation before its
// own last status write reached the cache: it would take a recorded
// revision for a crashed one. The reconcile writes no status and runs
// again.
var ErrStaleView = errors.New("the installation changed since it was read; reconciling it again")

// WriteIntent records revision rev before any object of it is applied: a
// Secret owned by the installation gets rec (the rendered set, hooks
// included, and in rec.Inventory the inventory about to be applied; its
// number and digests are rev's). It may give rev another number (rule
// 2). The status inventory grows by the planned inventory and by every
// leftover's, so that a failing apply records everything it may have
// touched.
//
// Errors: ErrStaleView; Refused(err) true when the record cannot be
// stored at its size (retrying cannot help); anything else is retried.
func (k *Keeper) WriteIntent(ctx context.Context, rev *v1alpha1.Revision, rec Record) error {
	planned := rec.Inventory
	numbered := func() Record {
		rec.Revision, rec.Version, rec.ValuesDigest, rec.ManifestDigest = rev.Number, rev.Version, rev.ValuesDigest, rev.ManifestDigest
		return rec
	}
	enc, err := Encode(numbered())
	if err == nil {
		err = k.store.Create(ctx, rev.Number, enc.Index)
	}
	if apierrors.IsAlreadyExists(err) {
		var reused bool
		if reused, err = k.takeOverLeftovers(ctx, rev, planned); err == nil && !reused {
			if enc, err = Encode(numbered()); err == nil {
				err = k.store.Create(ctx, rev.Number, enc.Index)
			}
		}
	}
	if err != nil {
		return err
	}
	failpoint.Hit(failpoint.AfterRecordIndex, k.inst.Namespace+"/"+k.inst.Name)
	if err := k.store.Attach(ctx, enc.Pieces); err != nil {
		return fmt.Errorf("writing the pieces of the record of revision %d: %w", rev.Number, err)
	}
	k.pieces = make([]string, 0, len(enc.Pieces))
	for _, p := range enc.Pieces {
		k.pieces = append(k.pieces, p.Digest)
	}
	k.inst.Status.Inventory, _ = target.UnionRefs(k.inst.Status.Inventory, planned)
	k.inst.Status.InventoryCount = int32(len(k.inst.Status.Inventory))
	return nil
}

// Refused reports whether err, from WriteIntent, says the record cannot
// be stored as it is: too large, or refused by the API server as invalid
// or too large. Retrying sends the same bytes.
func Refused(err error) bool {
	var tooLarge *TooLargeError
	return errors.As(err, &tooLarge) || apierrors.IsInvalid(err) || apierrors.IsRequestEntityTooLargeError(err)
}

// RefusedStop is how a record of rev that cannot be stored (Refused)
// stops inst: terminal, since retrying cannot help, saying what to do;
// nil for any other error of WriteIntent, which is retried.
func RefusedStop(inst *v1alpha1.ExtensionInstallation, rev *v1alpha1.Revision, err error) *news.Stop {
	if !Refused(err) {
		return nil
	}
	return &news.Stop{Kind: news.Terminal, Reason: v1alpha1.ReasonRecordTooLarge, Message: fmt.Sprintf(
		"cannot record revision %d of %s %s: %v; render less (check spec.values) or choose another version with spec.version",
		rev.Number, inst.Spec.Extension, rev.Version, err)}
}

// takeOverLeftovers is called when the record of rev.Number exists. After
// checking that the reconcile's view of the installation is current, it
// adds the inventory of every record above the recorded revision to the
// status inventory and gives rev the number above all of them — unless
// the highest holds exactly rev's content, which rev then takes as its own
// (reused). The leftovers are kept, to be deleted once the status
// recording rev is written (DeleteSuperseded).
func (k *Keeper) takeOverLeftovers(ctx context.Context, rev *v1alpha1.Revision, planned []v1alpha1.ObjectReference) (reused bool, err error) {
	inst := k.inst
	fresh := &v1alpha1.ExtensionInstallation{}
	if err := k.store.reader.Get(ctx, client.ObjectKeyFromObject(inst), fresh); err != nil {
		return false, err
	}
	if fresh.ResourceVersion != inst.ResourceVersion {
		return false, ErrStaleView
	}
	records, err := k.store.List(ctx)
	if err != nil {
		return false, err
	}
	k.listed = records
	recorded := Recorded(inst)
	var leftovers []Stored
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
		if err := k.store.CheckName(ctx, rev.Number); err != nil {
			return false, err
		}
		return false, ErrStaleView
	}
	if len(leftovers) > maxLeftoverRecords {
		return false, fmt.Errorf("%d records of attempts that never completed; delete the Secrets annex.%s.v* above v%d by hand",
			len(leftovers), k.store.Stem(), recorded)
	}
	highest := leftovers[0] // List sorts newest first
	if ix, err := highest.Index(); err == nil && sameContent(ix, *rev, planned) {
		rev.Number = highest.Number
		k.superseded = leftovers[1:]
		return true, nil
	}
	rev.Number = highest.Number + 1
	k.superseded = leftovers
	return false, nil
}

// Recorded is the number of the revision inst's status records, 0 before
// the first.
func Recorded(inst *v1alpha1.ExtensionInstallation) int64 {
	if len(inst.Status.History) == 0 {
		return 0
	}
	return inst.Status.History[0].Number
}

// sameContent reports whether a record holds exactly what rev would.
func sameContent(ix Index, rev v1alpha1.Revision, planned []v1alpha1.ObjectReference) bool {
	if ix.Version != rev.Version || ix.ValuesDigest != rev.ValuesDigest || ix.ManifestDigest != rev.ManifestDigest ||
		len(ix.Inventory) != len(planned) {
		return false
	}
	_, grew := target.UnionRefs(ix.Inventory, planned)
	return !grew
}

// DeleteSuperseded deletes the leftovers a WriteIntent took over, once
// the status recording its revision is written (rule 4). A failure may
// be left to Trim: nothing depends on those records any more.
func (k *Keeper) DeleteSuperseded(ctx context.Context) error {
	if len(k.superseded) == 0 {
		return nil
	}
	doomed := k.superseded
	k.superseded = nil
	var survivors []Stored
	for _, rec := range k.listed {
		if !slices.ContainsFunc(doomed, func(d Stored) bool { return d.Number == rec.Number }) {
			survivors = append(survivors, rec)
		}
	}
	return k.store.Delete(ctx, doomed, survivors, k.pieces)
}

// Trim deletes the records a history of limit revisions no longer keeps,
// once revision n is recorded.
func (k *Keeper) Trim(ctx context.Context, n int64, limit int) error {
	upTo := n - int64(limit)
	if upTo <= 0 {
		return nil
	}
	records, err := k.store.List(ctx)
	if err != nil {
		return err
	}
	var doomed, survivors []Stored
	for _, rec := range records {
		if rec.Number <= upTo {
			doomed = append(doomed, rec)
		} else {
			survivors = append(survivors, rec)
		}
	}
	return k.store.Delete(ctx, doomed, survivors, k.pieces)
}

// Read returns the record of revision n, if it exists.
func (k *Keeper) Read(ctx context.Context, n int64) (Record, bool, error) {
	return k.store.Read(ctx, n)
}

// Installed returns the record of the installation's installed revision
// (the newest of its status.history), read once per keeper: the render,
// the gates, the start of a revision and the drift check of a reconcile
// all need it. found is false on install (no history) and when the record
// does not exist.
func (k *Keeper) Installed(ctx context.Context) (rec Record, found bool, err error) {
	if len(k.inst.Status.History) == 0 {
		return Record{}, false, nil
	}
	n := k.inst.Status.History[0].Number
	if k.installed == nil || k.installed.n != n {
		rec, found, err := k.Read(ctx, n)
		if err != nil {
			return Record{}, false, err
		}
		k.installed = &installedRecord{n: n, rec: rec, found: found}
	}
	return k.installed.rec, k.installed.found, nil
}

// Any reports whether the installation has a record at all.
func (k *Keeper) Any(ctx context.Context) (bool, error) {
	records, err := k.store.List(ctx)
	return len(records) > 0, err
}

// Uninstalling takes the records over for an uninstall: the inventory of
// each revision newer than the recorded one (an apply that crashed or
// failed before the status recorded it) joins the status inventory, and
// the recorded revision's record is returned, for its delete hooks and
// cleanup plan; found is false when it cannot be read.
func (k *Keeper) Uninstalling(ctx context.Context) (installed Record, found bool, err error) {
	records, err := k.store.List(ctx)
	if err != nil {
		return Record{}, false, err
	}
	k.listed = records
	recorded := Recorded(k.inst)
	for _, rec := range records {
		switch {
		case rec.Number > recorded:
			ix, err := rec.Index()
			if err != nil {
				continue // its objects carry the installation's labels; nothing better is known
			}
			k.inst.Status.Inventory, _ = target.UnionRefs(k.inst.Status.Inventory, ix.Inventory)
			k.inst.Status.InventoryCount = int32(len(k.inst.Status.Inventory))
		case rec.Number == recorded:
			whole, err := k.store.Load(ctx, rec)
			return whole, err == nil, nil
		}
	}
	return Record{}, false, nil
}

// DeleteAll deletes the records Uninstalling listed, and their pieces,
// once every object they list is deleted.
func (k *Keeper) DeleteAll(ctx context.Context) error {
	return k.store.Delete(ctx, k.listed, nil, nil)
}
