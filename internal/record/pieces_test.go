package record

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/values"
)

// A fleet's installations of one chart in one namespace share a piece
// past the first copy's owner limit through the buckets' copies: 60
// installations with a limit of 3 store 32 copies (before the buckets,
// 58: one shared, 57 private), each within the limit, each installation
// owning one, reading the piece and releasing it until no copy is left.
// An installation with a private copy written before the buckets joins
// a shared copy too, and releases both.
func TestPiecesSharedPastOwnerLimit(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	defer func(n int) { maxPieceOwners = n }(maxPieceOwners)
	maxPieceOwners = 3
	const ns, fleet = "default", 60
	piece := Piece{Data: []byte("the same CRDs on every cluster")}
	piece.Digest = values.DigestBytes(piece.Data)

	stores := make([]*Store, fleet)
	for i := range stores {
		inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns,
			Name: fmt.Sprintf("kps-cluster-%02d", i), UID: types.UID(fmt.Sprintf("0b8ad0d0-0000-4000-8000-%012d", i))}}
		stores[i] = NewStore(env.Client, env.Client, inst)
	}
	// The last installation has a private copy, as Annex wrote them
	// before the buckets.
	legacy := stores[fleet-1]
	must(t, env.Client.Create(ctx, legacy.newPiece(privatePieceName(piece.Digest, legacy.inst.UID), piece)))
	for _, s := range stores {
		must(t, s.Attach(ctx, []Piece{piece}))
		must(t, s.Attach(ctx, []Piece{piece})) // again: nothing changes
	}

	copies := pieceSecrets(t, env.Client, ns)
	owners := map[types.UID]string{}
	for _, sec := range copies {
		if len(sec.OwnerReferences) > maxPieceOwners {
			t.Errorf("%s has %d owners; the limit is %d", sec.Name, len(sec.OwnerReferences), maxPieceOwners)
		}
		for _, o := range sec.OwnerReferences {
			if other, dup := owners[o.UID]; dup && o.UID != legacy.inst.UID {
				t.Errorf("%s owns both %s and %s", o.Name, other, sec.Name)
			}
			owners[o.UID] = sec.Name
		}
	}
	if len(owners) != fleet {
		t.Errorf("%d installations own a copy; want %d", len(owners), fleet)
	}
	private := 0
	for _, sec := range copies {
		if strings.HasSuffix(sec.Name, "."+string(legacy.inst.UID)) {
			private++
		}
	}
	// 60 owners at 3 a copy are at least 20 copies; the hash spreads them
	// over the 16 buckets of the first level, and those that overflow over
	// the 256 of the second, with 1 or 2 owners each (the UIDs are fixed,
	// so the count is too).
	if private != 1 || len(copies) > 32 {
		t.Errorf("%d copies of the piece, %d private; want at most 32, the legacy one the only private one", len(copies), private)
	}
	t.Logf("%d installations, at most %d owners a copy: %d copies", fleet, maxPieceOwners, len(copies))

	for _, s := range stores {
		data, err := s.loadPiece(ctx, piece.Digest)
		if err != nil || string(data) != string(piece.Data) {
			t.Fatalf("%s reads %q, %v", s.inst.Name, data, err)
		}
	}
	for _, s := range stores {
		must(t, s.releasePiece(ctx, piece.Digest))
	}
	if left := pieceSecrets(t, env.Client, ns); len(left) != 0 {
		t.Errorf("%d copies left after every installation released the piece", len(left))
	}
}

func pieceSecrets(t *testing.T, c client.Client, ns string) []corev1.Secret {
	t.Helper()
	var list corev1.SecretList
	must(t, c.List(t.Context(), &list, client.InNamespace(ns)))
	var out []corev1.Secret
	for _, sec := range list.Items {
		if sec.Type == v1alpha1.RecordPieceSecretType {
			out = append(out, sec)
		}
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
