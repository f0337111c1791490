package record

import (
	"context"
	"fmt"
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
	key := client.ObjectKey{Namespace: inst.Namespace, Name: pieceName(p.Digest)}
	for range maxPieceAttempts {
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
		if len(sec.OwnerReferences) >= maxPieceOwners {
			err := s.client.Create(ctx, s.newPiece(privatePieceName(p.Digest, inst.UID), p))
			return client.IgnoreAlreadyExists(err)
		}
		patch := client.MergeFromWithOptions(sec.DeepCopy(), client.MergeFromWithOptimisticLock{})
		sec.OwnerReferences = append(sec.OwnerReferences, s.owner())
		err = s.client.Patch(ctx, sec, patch)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // changed or released meanwhile: read it again
		}
		return err
	}
	return fmt.Errorf("Secret %s/%s kept changing while Annex added %s to its owners", key.Namespace, key.Name, inst.Name)
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

// releasePiece removes the installation from the owners of a piece it
// uses (shared or private), deleting the piece when no owner is left. A
// piece already gone is released.
func (s *Store) releasePiece(ctx context.Context, digest string) error {
	inst := s.inst
	for range maxPieceAttempts {
		sec, err := s.ownedPiece(ctx, digest)
		if sec == nil || err != nil {
			return err
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

// ownedPiece returns the copy of a piece the installation owns, or nil.
func (s *Store) ownedPiece(ctx context.Context, digest string) (*corev1.Secret, error) {
	return s.pieceCopy(ctx, digest, func(sec *corev1.Secret) (bool, error) { return ownedBy(sec, s.inst.UID), nil })
}

// loadPiece reads the data of a piece: the shared copy, or the
// installation's own.
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

// pieceCopy reads the copies of a piece that exist, the shared one first,
// then the installation's own, and returns the first that take accepts;
// nil when it accepts none. An error reading a copy or from take ends the
// search.
func (s *Store) pieceCopy(ctx context.Context, digest string, take func(*corev1.Secret) (bool, error)) (*corev1.Secret, error) {
	for _, name := range []string{pieceName(digest), privatePieceName(digest, s.inst.UID)} {
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
