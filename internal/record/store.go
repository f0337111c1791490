package record

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

// Store keeps the revision records of one installation: the Secret
// annex.<name>.v<n> (type annex.dev/revision, labelled with the
// installation's name and the revision) holds the index of revision n,
// owned by the installation; a large record's pieces are Secrets of their
// own (see Attach). The Store does Secret I/O only; which records to
// write, keep or delete is its caller's decision.
type Store struct {
	client client.Client // writes
	reader client.Reader // reads, uncached: Annex does not cache every Secret
	inst   *v1alpha1.ExtensionInstallation
}

// NewStore returns the store of inst's records, reading through reader
// and writing through c.
func NewStore(c client.Client, reader client.Reader, inst *v1alpha1.ExtensionInstallation) *Store {
	return &Store{client: c, reader: reader, inst: inst}
}

// Name is the Secret holding revision n, after Helm's
// sh.helm.release.v1.<name>.v<n>: annex.<name>.v<n>, the name shortened
// (names.Bounded) when the Secret's name would not fit 253 characters
// with any revision number.
func (s *Store) Name(n int64) string {
	return fmt.Sprintf("annex.%s.v%d", s.Stem(), n)
}

// Stem is the installation's name as its record Secrets' names carry it:
// room is kept for "annex.", ".v" and the 19 digits of the largest
// revision number, so that it is the same for every revision.
func (s *Store) Stem() string {
	return names.Bounded(s.inst.Name, names.MaxSubdomain-len("annex..v")-19)
}

// Create writes the index of revision n. Its error is the API server's:
// AlreadyExists when the name is taken, by a record or by another Secret.
func (s *Store) Create(ctx context.Context, n int64, index []byte) error {
	return s.client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.inst.Namespace,
			Name:      s.Name(n),
			Labels: map[string]string{
				v1alpha1.LabelInstallationName: names.LabelValue(s.inst.Name),
				v1alpha1.LabelRevision:         strconv.FormatInt(n, 10),
			},
			OwnerReferences: []metav1.OwnerReference{s.owner()},
		},
		Type: v1alpha1.RevisionSecretType,
		Data: map[string][]byte{"record": index},
	})
}

func (s *Store) owner() metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation", Name: s.inst.Name, UID: s.inst.UID,
	}
}

// CheckName reports why the name of revision n cannot be a record of the
// installation: the Secret holding it is of another type or installation
// (an error saying so), or reading it failed (that error, NotFound when
// there is none). It returns nil when the Secret is a record of the
// installation.
func (s *Store) CheckName(ctx context.Context, n int64) error {
	sec := &corev1.Secret{}
	if err := s.reader.Get(ctx, client.ObjectKey{Namespace: s.inst.Namespace, Name: s.Name(n)}, sec); err != nil {
		return err
	}
	if sec.Type != v1alpha1.RevisionSecretType || sec.Labels[v1alpha1.LabelInstallationName] != names.LabelValue(s.inst.Name) {
		return fmt.Errorf("Secret %s/%s exists and is not a record of this installation (type %q); rename or delete it",
			sec.Namespace, sec.Name, sec.Type)
	}
	return nil
}

// Stored is one record Secret of the installation.
type Stored struct {
	// Number is the revision the record holds.
	Number int64
	secret *corev1.Secret
	index  *decodedIndex // decoded once; nil decodes every time
}

type decodedIndex struct {
	done bool
	ix   Index
	err  error
}

// Index decodes the record's index (DecodeIndex); a record that List
// returned is decoded once.
func (rec Stored) Index() (Index, error) {
	if rec.index == nil {
		return DecodeIndex(rec.secret.Data["record"])
	}
	if !rec.index.done {
		rec.index.ix, rec.index.err = DecodeIndex(rec.secret.Data["record"])
		rec.index.done = true
	}
	return rec.index.ix, rec.index.err
}

// List returns the installation's records, newest first: the Secrets
// labelled with its name that have the record type, a revision label and
// the name that revision's record has.
func (s *Store) List(ctx context.Context) ([]Stored, error) {
	var list corev1.SecretList
	if err := s.reader.List(ctx, &list, client.InNamespace(s.inst.Namespace),
		client.MatchingLabels{v1alpha1.LabelInstallationName: names.LabelValue(s.inst.Name)}); err != nil {
		return nil, err
	}
	var out []Stored
	for i := range list.Items {
		sec := &list.Items[i]
		n, err := strconv.ParseInt(sec.Labels[v1alpha1.LabelRevision], 10, 64)
		if sec.Type != v1alpha1.RevisionSecretType || err != nil || sec.Name != s.Name(n) {
			continue
		}
		out = append(out, Stored{Number: n, secret: sec, index: &decodedIndex{}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number > out[j].Number })
	return out, nil
}

// Read returns the whole record of revision n, its set read from its
// pieces; found is false, with no error, when its Secret does not exist.
func (s *Store) Read(ctx context.Context, n int64) (rec Record, found bool, err error) {
	sec := &corev1.Secret{}
	err = s.reader.Get(ctx, client.ObjectKey{Namespace: s.inst.Namespace, Name: s.Name(n)}, sec)
	if apierrors.IsNotFound(err) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, err
	}
	rec, err = s.Load(ctx, Stored{Number: n, secret: sec})
	return rec, err == nil, err
}

// Load returns the whole record rec holds, its set read from its pieces.
// An index that does not decode, or a piece that is missing, not a piece
// or not what its digest says, is an error.
func (s *Store) Load(ctx context.Context, rec Stored) (Record, error) {
	ix, err := rec.Index()
	if err != nil {
		return Record{}, err
	}
	whole := ix.Record
	whole.CRDs, whole.Objects, err = ix.Set(func(digest string) ([]byte, error) { return s.loadPiece(ctx, digest) })
	if err != nil {
		return Record{}, err
	}
	return whole, nil
}

// Delete deletes the doomed records. First it releases the pieces they
// use that neither a survivor nor keep (the digests of a record written
// since survivors were listed) uses; then it deletes their indexes, so
// that a piece the installation owns stays referenced by one of its
// records. A record whose index does not decode releases nothing; a
// record already gone is deleted.
func (s *Store) Delete(ctx context.Context, doomed, survivors []Stored, keep []string) error {
	used := map[string]bool{}
	for _, d := range keep {
		used[d] = true
	}
	for _, rec := range survivors {
		ix, err := rec.Index()
		if err != nil {
			continue
		}
		for _, d := range ix.Pieces() {
			used[d] = true
		}
	}
	for _, rec := range doomed {
		ix, err := rec.Index()
		if err != nil {
			continue
		}
		for _, d := range ix.Pieces() {
			if !used[d] {
				used[d] = true // released once
				if err := s.releasePiece(ctx, d); err != nil {
					return fmt.Errorf("releasing a piece of the record of revision %d: %w", rec.Number, err)
				}
			}
		}
	}
	for _, rec := range doomed {
		if err := s.client.Delete(ctx, rec.secret); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the record of revision %d: %w", rec.Number, err)
		}
	}
	return nil
}
