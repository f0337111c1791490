package installation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/names"
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

// RecordCodec turns a revision record into what is stored and back;
// internal/record's Encode/DecodeIndex (gzip'd JSON) in production.
type RecordCodec interface {
	// Encode returns the record of rev. An error with a TooLarge() method
	// returning true means the record cannot be stored at all.
	Encode(rev v1alpha1.Revision, inventory []v1alpha1.ObjectReference, set Set) (EncodedRecord, error)
	// DecodeIndex reads a record's index; it reads no piece.
	DecodeIndex(index []byte) (RecordIndex, error)
}

// EncodedRecord is a record ready to store: the index under the revision's
// name, each piece under its digest.
type EncodedRecord struct {
	Index  []byte
	Pieces []RecordPiece
}

// RecordPiece is a part of a large record's rendered set.
type RecordPiece struct {
	Digest string // "sha256:<hex>" of Data
	Data   []byte
}

// RecordIndex is what a record's index says.
type RecordIndex struct {
	Version, ValuesDigest, ManifestDigest string
	Inventory                             []v1alpha1.ObjectReference
	// Package is the package engine's part of the record (Set.Package).
	Package []byte
	// Pieces are the digests of the pieces holding the rendered set; none
	// when the index holds it.
	Pieces []string
	// Set returns the rendered set, reading pieces with load.
	Set func(load func(digest string) ([]byte, error)) (Set, error)
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete

// recordName is the Secret holding revision n of an installation, after
// Helm's sh.helm.release.v1.<name>.v<n>: annex.<name>.v<n>, the name
// shortened (names.Bounded) when the Secret's name would not fit 253
// characters with any revision number.
func recordName(inst *v1alpha1.ExtensionInstallation, n int64) string {
	return fmt.Sprintf("annex.%s.v%d", recordStem(inst), n)
}

// recordStem is the installation's name as its record Secrets' names
// carry it: room is kept for "annex.", ".v" and the 19 digits of the
// largest revision number, so that it is the same for every revision.
func recordStem(inst *v1alpha1.ExtensionInstallation) string {
	return names.Bounded(inst.Name, names.MaxSubdomain-len("annex..v")-19)
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
func (r *Reconciler) writeIntent(ctx context.Context, s *scope, rev *v1alpha1.Revision, set Set) error {
	return r.writeIntentWith(ctx, s, rev, set, slices.Concat(set.CRDs, set.Objects))
}

// writeIntentWith is writeIntent for a set whose apply may touch more
// than the set holds: a package's plans may apply objects that a later
// step deletes again. The record's inventory lists everything.
func (r *Reconciler) writeIntentWith(ctx context.Context, s *scope, rev *v1alpha1.Revision, set Set, everything []*unstructured.Unstructured) error {
	inst := s.inst
	planned := s.target.Applier().Refs(everything, s.targetNamespace())
	enc, err := r.Records.Encode(*rev, planned, set)
	if err == nil {
		err = r.createRecord(ctx, inst, rev.Number, enc.Index)
	}
	if apierrors.IsAlreadyExists(err) {
		var reused bool
		if reused, err = r.takeOverLeftovers(ctx, s, rev, planned); err == nil && !reused {
			if enc, err = r.Records.Encode(*rev, planned, set); err == nil {
				err = r.createRecord(ctx, inst, rev.Number, enc.Index)
			}
		}
	}
	if err != nil {
		return r.recordRefused(s, rev, err)
	}
	failpoint.Hit(failpoint.AfterRecordIndex, s.owner().String())
	if err := r.attachPieces(ctx, inst, enc.Pieces); err != nil {
		return fmt.Errorf("writing the pieces of the record of revision %d: %w", rev.Number, err)
	}
	s.recordPieces = make([]string, 0, len(enc.Pieces))
	for _, p := range enc.Pieces {
		s.recordPieces = append(s.recordPieces, p.Digest)
	}
	inst.Status.Inventory, _ = unionRefs(inst.Status.Inventory, planned)
	inst.Status.InventoryCount = int32(len(inst.Status.Inventory))
	return nil
}

// errRecordRefused: the record cannot be stored; s.block says why.
var errRecordRefused = errors.New("the revision record cannot be stored")

// recordRefused turns a failure to store a record into a terminal block
// when retrying cannot help (the record is too large, or the API server
// refuses the Secret as invalid), or into a retried error.
func (r *Reconciler) recordRefused(s *scope, rev *v1alpha1.Revision, err error) error {
	var tooLarge interface{ TooLarge() bool }
	if !(errors.As(err, &tooLarge) && tooLarge.TooLarge()) && !apierrors.IsInvalid(err) && !apierrors.IsRequestEntityTooLargeError(err) {
		if errors.Is(err, errStaleView) {
			s.stale = true
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

// createRecord writes the index of revision n.
func (r *Reconciler) createRecord(ctx context.Context, inst *v1alpha1.ExtensionInstallation, n int64, index []byte) error {
	return r.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: inst.Namespace,
			Name:      recordName(inst, n),
			Labels: map[string]string{
				v1alpha1.LabelInstallationName: names.LabelValue(inst.Name),
				v1alpha1.LabelRevision:         strconv.FormatInt(n, 10),
			},
			OwnerReferences: []metav1.OwnerReference{installationOwner(inst)},
		},
		Type: v1alpha1.RevisionSecretType,
		Data: map[string][]byte{"record": index},
	})
}

func installationOwner(inst *v1alpha1.ExtensionInstallation) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation", Name: inst.Name, UID: inst.UID,
	}
}

// takeOverLeftovers is called when the record of rev.Number exists. After
// checking that the reconcile's view of the installation is current, it
// adds the inventory of every record above the recorded revision to the
// status inventory and gives rev the number above all of them — unless
// the highest holds exactly rev's content, which rev then takes as its own
// (reused). The leftovers are kept in s.superseded, to be deleted once the
// status recording rev is written.
func (r *Reconciler) takeOverLeftovers(ctx context.Context, s *scope, rev *v1alpha1.Revision, planned []v1alpha1.ObjectReference) (reused bool, err error) {
	inst := s.inst
	fresh := &v1alpha1.ExtensionInstallation{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(inst), fresh); err != nil {
		return false, err
	}
	if fresh.ResourceVersion != inst.ResourceVersion {
		return false, errStaleView
	}
	records, err := r.listRecords(ctx, inst)
	if err != nil {
		return false, err
	}
	s.records = records
	recorded := recordedRevision(inst)
	var leftovers []storedRecord
	for _, rec := range records {
		if rec.number <= recorded {
			continue
		}
		if ix, err := rec.decode(r.Records); err == nil {
			inst.Status.Inventory, _ = unionRefs(inst.Status.Inventory, ix.Inventory)
		}
		// An undecodable record is superseded all the same: its objects
		// carry this installation's labels, and nothing better is known.
		leftovers = append(leftovers, rec)
	}
	if len(leftovers) == 0 {
		return false, r.notALeftover(ctx, inst, rev.Number)
	}
	if len(leftovers) > maxLeftoverRecords {
		return false, fmt.Errorf("%d records of attempts that never completed; delete the Secrets annex.%s.v* above v%d by hand",
			len(leftovers), recordStem(inst), recorded)
	}
	highest := leftovers[0] // listRecords sorts newest first
	if ix, err := highest.decode(r.Records); err == nil && sameContent(ix, *rev, planned) {
		rev.Number = highest.number
		s.superseded = leftovers[1:]
		return true, nil
	}
	rev.Number = highest.number + 1
	s.superseded = leftovers
	return false, nil
}

// notALeftover explains why the record name of revision n is taken
// although no record above the recorded revision exists: a Secret that is
// not an Annex record has it, or the view is stale after all.
func (r *Reconciler) notALeftover(ctx context.Context, inst *v1alpha1.ExtensionInstallation, n int64) error {
	sec := &corev1.Secret{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: recordName(inst, n)}, sec); err != nil {
		return err
	}
	if sec.Type != v1alpha1.RevisionSecretType || sec.Labels[v1alpha1.LabelInstallationName] != names.LabelValue(inst.Name) {
		return fmt.Errorf("Secret %s/%s exists and is not a record of this installation (type %q); rename or delete it",
			sec.Namespace, sec.Name, sec.Type)
	}
	return errStaleView
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
func sameContent(ix RecordIndex, rev v1alpha1.Revision, planned []v1alpha1.ObjectReference) bool {
	if ix.Version != rev.Version || ix.ValuesDigest != rev.ValuesDigest || ix.ManifestDigest != rev.ManifestDigest ||
		len(ix.Inventory) != len(planned) {
		return false
	}
	_, grew := unionRefs(ix.Inventory, planned)
	return !grew
}

// deleteSuperseded deletes the leftovers an apply took over, once the
// status recording that apply is written (rule 4). A failure is logged by
// the caller and left to trimRecords.
func (r *Reconciler) deleteSuperseded(ctx context.Context, s *scope) error {
	if len(s.superseded) == 0 {
		return nil
	}
	doomed := s.superseded
	s.superseded = nil
	var survivors []storedRecord
	for _, rec := range s.records {
		if !slices.ContainsFunc(doomed, func(d storedRecord) bool { return d.number == rec.number }) {
			survivors = append(survivors, rec)
		}
	}
	return r.deleteRecords(ctx, s.inst, doomed, survivors, s.recordPieces)
}

// trimRecords deletes the records the history no longer keeps, once
// revision n is recorded.
func (r *Reconciler) trimRecords(ctx context.Context, s *scope, n int64) error {
	upTo := n - int64(r.historyLimit())
	if upTo <= 0 {
		return nil
	}
	records, err := r.listRecords(ctx, s.inst)
	if err != nil {
		return err
	}
	var doomed, survivors []storedRecord
	for _, rec := range records {
		if rec.number <= upTo {
			doomed = append(doomed, rec)
		} else {
			survivors = append(survivors, rec)
		}
	}
	return r.deleteRecords(ctx, s.inst, doomed, survivors, s.recordPieces)
}

// deleteRecords deletes the doomed records of inst. First it releases the
// pieces they use that neither a survivor nor keep (the digests of a
// record written in this reconcile) uses; then it deletes their indexes.
func (r *Reconciler) deleteRecords(ctx context.Context, inst *v1alpha1.ExtensionInstallation, doomed, survivors []storedRecord, keep []string) error {
	used := map[string]bool{}
	for _, d := range keep {
		used[d] = true
	}
	for _, rec := range survivors {
		ix, err := rec.decode(r.Records)
		if err != nil {
			continue
		}
		for _, d := range ix.Pieces {
			used[d] = true
		}
	}
	for _, rec := range doomed {
		ix, err := rec.decode(r.Records)
		if err != nil {
			continue
		}
		for _, d := range ix.Pieces {
			if !used[d] {
				used[d] = true // released once
				if err := r.releasePiece(ctx, inst, d); err != nil {
					return fmt.Errorf("releasing a piece of the record of revision %d: %w", rec.number, err)
				}
			}
		}
	}
	for _, rec := range doomed {
		if err := r.Client.Delete(ctx, rec.secret); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the record of revision %d: %w", rec.number, err)
		}
	}
	return nil
}

// recordOf returns the rendered set of revision n, if its record exists.
func (r *Reconciler) recordOf(ctx context.Context, inst *v1alpha1.ExtensionInstallation, n int64) (Set, bool, error) {
	sec := &corev1.Secret{}
	err := r.Reader.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: recordName(inst, n)}, sec)
	if apierrors.IsNotFound(err) {
		return Set{}, false, nil
	}
	if err != nil {
		return Set{}, false, err
	}
	set, err := r.setOf(ctx, inst, storedRecord{number: n, secret: sec})
	return set, err == nil, err
}

// setOf returns the rendered set a record holds, reading its pieces.
func (r *Reconciler) setOf(ctx context.Context, inst *v1alpha1.ExtensionInstallation, rec storedRecord) (Set, error) {
	ix, err := rec.decode(r.Records)
	if err != nil {
		return Set{}, err
	}
	return ix.Set(func(digest string) ([]byte, error) { return r.loadPiece(ctx, inst, digest) })
}

// storedRecord is one record Secret of an installation.
type storedRecord struct {
	number int64
	secret *corev1.Secret
	index  *decodedIndex // decoded once per reconcile; nil decodes every time
}

type decodedIndex struct {
	done bool
	ix   RecordIndex
	err  error
}

func (rec storedRecord) decode(codec RecordCodec) (RecordIndex, error) {
	if rec.index == nil {
		return codec.DecodeIndex(rec.secret.Data["record"])
	}
	if !rec.index.done {
		rec.index.ix, rec.index.err = codec.DecodeIndex(rec.secret.Data["record"])
		rec.index.done = true
	}
	return rec.index.ix, rec.index.err
}

// listRecords returns the installation's record Secrets, newest first.
func (r *Reconciler) listRecords(ctx context.Context, inst *v1alpha1.ExtensionInstallation) ([]storedRecord, error) {
	var list corev1.SecretList
	if err := r.Reader.List(ctx, &list, client.InNamespace(inst.Namespace),
		client.MatchingLabels{v1alpha1.LabelInstallationName: names.LabelValue(inst.Name)}); err != nil {
		return nil, err
	}
	var out []storedRecord
	for i := range list.Items {
		sec := &list.Items[i]
		n, err := strconv.ParseInt(sec.Labels[v1alpha1.LabelRevision], 10, 64)
		if sec.Type != v1alpha1.RevisionSecretType || err != nil || sec.Name != recordName(inst, n) {
			continue
		}
		out = append(out, storedRecord{number: n, secret: sec, index: &decodedIndex{}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].number > out[j].number })
	return out, nil
}

// Pieces. A piece is the Secret annex.piece.<hex> in the installation's
// namespace, holding bytes whose sha256 is <hex>, with one owner reference
// per installation whose records use it: Kubernetes' garbage collector
// removes it when all of them are gone, and Annex releases it when their
// records stop using it. A piece owned by maxPieceOwners installations is
// not shared further: the next installation keeps a private copy,
// annex.piece.<hex>.<its UID>, so that the owner list stays small.

const maxPieceOwners = 500

func pieceName(digest string) string { return "annex.piece." + strings.TrimPrefix(digest, "sha256:") }

func privatePieceName(digest string, uid types.UID) string {
	return pieceName(digest) + "." + string(uid)
}

// maxPieceAttempts bounds the read-modify-write of a piece's owners when
// other installations change them at the same time.
const maxPieceAttempts = 10

// attachPieces makes sure every piece exists and is owned by inst.
func (r *Reconciler) attachPieces(ctx context.Context, inst *v1alpha1.ExtensionInstallation, pieces []RecordPiece) error {
	for _, p := range pieces {
		if err := r.attachPiece(ctx, inst, p); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) attachPiece(ctx context.Context, inst *v1alpha1.ExtensionInstallation, p RecordPiece) error {
	key := client.ObjectKey{Namespace: inst.Namespace, Name: pieceName(p.Digest)}
	for range maxPieceAttempts {
		sec := &corev1.Secret{}
		err := r.Reader.Get(ctx, key, sec)
		switch {
		case apierrors.IsNotFound(err):
			err = r.Client.Create(ctx, newPiece(inst, key.Name, p))
			if apierrors.IsAlreadyExists(err) {
				continue // another installation wrote it first
			}
			return err
		case err != nil:
			return err
		}
		if err := checkPiece(sec, p.Digest); err != nil {
			return err
		}
		if ownedBy(sec, inst.UID) {
			return nil
		}
		if len(sec.OwnerReferences) >= maxPieceOwners {
			err := r.Client.Create(ctx, newPiece(inst, privatePieceName(p.Digest, inst.UID), p))
			return client.IgnoreAlreadyExists(err)
		}
		patch := client.MergeFromWithOptions(sec.DeepCopy(), client.MergeFromWithOptimisticLock{})
		sec.OwnerReferences = append(sec.OwnerReferences, installationOwner(inst))
		err = r.Client.Patch(ctx, sec, patch)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // changed or released meanwhile: read it again
		}
		return err
	}
	return fmt.Errorf("Secret %s/%s kept changing while Annex added %s to its owners", key.Namespace, key.Name, inst.Name)
}

func newPiece(inst *v1alpha1.ExtensionInstallation, name string, p RecordPiece) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       inst.Namespace,
			Name:            name,
			Annotations:     map[string]string{v1alpha1.AnnotationDigest: p.Digest},
			OwnerReferences: []metav1.OwnerReference{installationOwner(inst)},
		},
		Type: v1alpha1.RecordPieceSecretType,
		Data: map[string][]byte{"piece": p.Data},
	}
}

func checkPiece(sec *corev1.Secret, digest string) error {
	if sec.Type != v1alpha1.RecordPieceSecretType || sec.Annotations[v1alpha1.AnnotationDigest] != digest {
		return fmt.Errorf("Secret %s/%s exists and is not the Annex record piece %s; rename or delete it", sec.Namespace, sec.Name, digest)
	}
	return nil
}

func ownedBy(sec *corev1.Secret, uid types.UID) bool {
	return slices.ContainsFunc(sec.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == uid })
}

// releasePiece removes inst from the owners of a piece it uses (shared or
// private), deleting the piece when no owner is left. A piece already gone
// is released.
func (r *Reconciler) releasePiece(ctx context.Context, inst *v1alpha1.ExtensionInstallation, digest string) error {
	for range maxPieceAttempts {
		sec, err := r.ownedPiece(ctx, inst, digest)
		if sec == nil || err != nil {
			return err
		}
		if len(sec.OwnerReferences) == 1 {
			err = r.Client.Delete(ctx, sec, client.Preconditions{ResourceVersion: &sec.ResourceVersion})
		} else {
			patch := client.MergeFromWithOptions(sec.DeepCopy(), client.MergeFromWithOptimisticLock{})
			sec.OwnerReferences = slices.DeleteFunc(sec.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == inst.UID })
			err = r.Client.Patch(ctx, sec, patch)
		}
		switch {
		case apierrors.IsConflict(err):
			continue // another installation attached or released it meanwhile
		case apierrors.IsNotFound(err):
			return nil
		default:
			return err
		}
	}
	return fmt.Errorf("the record piece %s kept changing while Annex released it for %s", digest, inst.Name)
}

// ownedPiece returns the copy of a piece inst owns, or nil.
func (r *Reconciler) ownedPiece(ctx context.Context, inst *v1alpha1.ExtensionInstallation, digest string) (*corev1.Secret, error) {
	for _, name := range []string{pieceName(digest), privatePieceName(digest, inst.UID)} {
		sec := &corev1.Secret{}
		err := r.Reader.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: name}, sec)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if ownedBy(sec, inst.UID) {
			return sec, nil
		}
	}
	return nil, nil
}

// loadPiece reads the data of a piece: the shared copy, or inst's own.
func (r *Reconciler) loadPiece(ctx context.Context, inst *v1alpha1.ExtensionInstallation, digest string) ([]byte, error) {
	for _, name := range []string{pieceName(digest), privatePieceName(digest, inst.UID)} {
		sec := &corev1.Secret{}
		err := r.Reader.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: name}, sec)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := checkPiece(sec, digest); err != nil {
			return nil, err
		}
		return sec.Data["piece"], nil
	}
	return nil, fmt.Errorf("Secret %s/%s is gone", inst.Namespace, pieceName(digest))
}

// ignoreRefused hides errRecordRefused, whose block already says what to
// do, from controller-runtime's retries.
func ignoreRefused(err error) error {
	if errors.Is(err, errRecordRefused) {
		return nil
	}
	return err
}
