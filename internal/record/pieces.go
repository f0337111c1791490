package record

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Pieces. A piece is the Secret annex.piece.<hex> in the installation's
// namespace, holding bytes whose sha256 is <hex>, with one owner reference
// per installation whose records use it: Kubernetes' garbage collector
// removes it when all of them are gone, and Annex releases it when their
// records stop using it. A copy owned by maxPieceOwners installations is
// not shared further, so that its owner list stays small: the next
// installation uses the shared copy of its bucket, then of its bucket at
// the next level (pieceLevels: annex.piece.<hex>.<width>-<bucket>, the
// bucket a hash of its UID), and only when those are full too a private
// copy, annex.piece.<hex>.<its UID>. A fleet of N installations of one
// chart in one namespace stores about 1 + N/maxPieceOwners copies of each
// piece up to the first level's capacity, not N − maxPieceOwners.

// maxPieceOwners is a variable for tests, which lower it to reach the
// buckets with a few installations.
var maxPieceOwners = 500

// pieceLevels are the widths of the levels of shared copies after the
// first: 16 buckets, then 256. Together with the first copy they hold
// (1 + 16 + 256) × maxPieceOwners owners before a private copy is made.
var pieceLevels = []uint32{16, 256}

func pieceName(digest string) string { return "annex.piece." + strings.TrimPrefix(digest, "sha256:") }

func privatePieceName(digest string, uid types.UID) string {
	return pieceName(digest) + "." + string(uid)
}

// pieceCopies are the names of the copies of a piece an installation may
// own, in the order it tries them: the first shared copy, its bucket's at
// each level, its private copy.
func pieceCopies(digest string, uid types.UID) []string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	sum := h.Sum32()
	names := []string{pieceName(digest)}
	for _, width := range pieceLevels {
		names = append(names, fmt.Sprintf("%s.%d-%d", pieceName(digest), width, sum%width))
	}
	return append(names, privatePieceName(digest, uid))
}

// maxPieceAttempts bounds the read-modify-write of a piece's owners when
// other installations change them at the same time.
const maxPieceAttempts = 10

// Attach makes sure every piece exists and is owned by the installation.
// It is called once the index referring to the pieces is written, so that
// a piece the installation owns is referenced by one of its records. A
// Secret with a piece's name that is not that piece is an error naming it.
func (s *Store) Attach(ctx context.Context, pieces []Piece) error {
	for _, p := range pieces {
		if err := s.attachPiece(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) attachPiece(ctx context.Context, p Piece) error {
	inst := s.inst
	copies := pieceCopies(p.Digest, inst.UID)
	for i, attempts := 0, 0; attempts < maxPieceAttempts; attempts++ {
		key := client.ObjectKey{Namespace: inst.Namespace, Name: copies[i]}
		sec := &corev1.Secret{}
		err := s.reader.Get(ctx, key, sec)
		switch {
		case apierrors.IsNotFound(err):
			err = s.client.Create(ctx, s.newPiece(key.Name, p))
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
		if len(sec.OwnerReferences) >= maxPieceOwners && i < len(copies)-1 {
			i++ // full: the next copy, not counted as an attempt
			attempts--
			continue
		}
		patch := client.MergeFromWithOptions(sec.DeepCopy(), client.MergeFromWithOptimisticLock{})
		sec.OwnerReferences = append(sec.OwnerReferences, s.owner())
		err = s.client.Patch(ctx, sec, patch)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // changed or released meanwhile: read it again
		}
		return err
	}
	return fmt.Errorf("the copies of Secret %s/%s kept changing while Annex added %s to their owners", inst.Namespace, pieceName(p.Digest), inst.Name)
}

func (s *Store) newPiece(name string, p Piece) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       s.inst.Namespace,
			Name:            name,
			Annotations:     map[string]string{v1alpha1.AnnotationDigest: p.Digest},
			OwnerReferences: []metav1.OwnerReference{s.owner()},
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

// releasePiece removes the installation from the owners of the copies
// of a piece it uses (usually one: a second when it joined a copy that
// had room again, or a shared one after a private copy written before
// the buckets), deleting a copy when no owner is left. A piece already
// gone is released.
func (s *Store) releasePiece(ctx context.Context, digest string) error {
	for _, name := range pieceCopies(digest, s.inst.UID) {
		if err := s.releaseCopy(ctx, digest, name); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) releaseCopy(ctx context.Context, digest, name string) error {
	inst := s.inst
	for range maxPieceAttempts {
		sec := &corev1.Secret{}
		err := s.reader.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: name}, sec)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if !ownedBy(sec, inst.UID) {
			return nil
		}
		if len(sec.OwnerReferences) == 1 {
			err = s.client.Delete(ctx, sec, client.Preconditions{ResourceVersion: &sec.ResourceVersion})
		} else {
			patch := client.MergeFromWithOptions(sec.DeepCopy(), client.MergeFromWithOptimisticLock{})
			sec.OwnerReferences = slices.DeleteFunc(sec.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == inst.UID })
			err = s.client.Patch(ctx, sec, patch)
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

// loadPiece reads the data of a piece: the first copy of pieceCopies
// that exists.
func (s *Store) loadPiece(ctx context.Context, digest string) ([]byte, error) {
	sec, err := s.pieceCopy(ctx, digest, func(sec *corev1.Secret) (bool, error) { return true, checkPiece(sec, digest) })
	if err != nil {
		return nil, err
	}
	if sec == nil {
		return nil, fmt.Errorf("Secret %s/%s is gone", s.inst.Namespace, pieceName(digest))
	}
	return sec.Data["piece"], nil
}

// pieceCopy reads the copies of a piece the installation may use that
// exist, in pieceCopies' order, and returns the first that take accepts;
// nil when it accepts none. An error reading a copy or from take ends the
// search.
func (s *Store) pieceCopy(ctx context.Context, digest string, take func(*corev1.Secret) (bool, error)) (*corev1.Secret, error) {
	for _, name := range pieceCopies(digest, s.inst.UID) {
		sec := &corev1.Secret{}
		err := s.reader.Get(ctx, client.ObjectKey{Namespace: s.inst.Namespace, Name: name}, sec)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if ok, err := take(sec); ok || err != nil {
			return sec, err
		}
	}
	return nil, nil
}
