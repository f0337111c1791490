package record

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// loader reads pieces from what Encode returned, as the controller
// reads them from Secrets.
func loader(pieces []Piece) func(string) ([]byte, error) {
	return func(digest string) ([]byte, error) {
		for _, p := range pieces {
			if p.Digest == digest {
				return p.Data, nil
			}
		}
		return nil, fmt.Errorf("no piece %s", digest)
	}
}

// bigCRD returns a CRD whose schema carries size bytes of text that
// compresses about as badly as a real operator's long descriptions do not
// (random words): the worst case for a record's size.
func bigCRD(t testing.TB, i, size int, seed uint64) *unstructured.Unstructured {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	words := make([]string, 0, size/6)
	for n := 0; n < size; {
		w := fmt.Sprintf("%x", rng.Uint32())
		words = append(words, w)
		n += len(w) + 1
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": fmt.Sprintf("things%d.big.annex.dev", i)},
		"spec": map[string]any{
			"group": "big.annex.dev",
			"names": map[string]any{"kind": fmt.Sprintf("Thing%d", i), "plural": fmt.Sprintf("things%d", i)},
			"scope": "Namespaced",
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "description": strings.Join(words, " "),
				}},
			}},
		},
	}}
	return crd
}

// bigRecord is a record of n CRDs of size bytes each and one ConfigMap
// whose value is value.
func bigRecord(t testing.TB, n, size int, value string) Record {
	r := Record{Revision: 1, Version: "1.0.0", ValuesDigest: "sha256:v", ManifestDigest: "sha256:m"}
	for i := range n {
		r.CRDs = append(r.CRDs, bigCRD(t, i, size, 1))
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "demo"},
		"data":     map[string]any{"value": value},
	}}
	r.Objects = []*unstructured.Unstructured{cm}
	for _, o := range append(append([]*unstructured.Unstructured{}, r.CRDs...), r.Objects...) {
		r.Inventory = append(r.Inventory, refOf(o))
	}
	return r
}

func TestRecordInPieces(t *testing.T) {
	want := bigRecord(t, 16, 250<<10, "a")
	enc, err := Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	var stored int
	for _, p := range enc.Pieces {
		if len(p.Data) > PieceSize {
			t.Errorf("piece %s holds %d bytes, more than PieceSize", p.Digest, len(p.Data))
		}
		stored += len(p.Data)
	}
	if stored < 2<<20 || len(enc.Pieces) < 3 {
		t.Fatalf("want a record over 2 MiB compressed in several pieces, got %d bytes in %d pieces", stored, len(enc.Pieces))
	}
	if len(enc.Index) > 4<<10 {
		t.Errorf("the index of a record in pieces takes %d bytes; it holds the inventory only", len(enc.Index))
	}
	// The inventory is read from the index alone.
	ix, err := DecodeIndex(enc.Index)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ix.Inventory, want.Inventory) || ix.Version != want.Version {
		t.Fatalf("the index lost the inventory or the version: %+v", ix.Record)
	}
	if len(ix.Pieces()) != len(enc.Pieces) {
		t.Errorf("the index lists %d pieces, the encoding made %d", len(ix.Pieces()), len(enc.Pieces))
	}
	crds, objects, err := ix.Set(loader(enc.Pieces))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(crds, want.CRDs) || !reflect.DeepEqual(objects, want.Objects) {
		t.Error("the set read back from the pieces differs from the one encoded")
	}
	if _, err := Decode(enc.Index); err == nil {
		t.Error("Decode of a record in pieces must say that it needs the pieces")
	}

	// A piece whose bytes do not match its digest, and a missing piece,
	// are refused.
	tampered := append([]Piece(nil), enc.Pieces...)
	tampered[0].Data = append([]byte("x"), tampered[0].Data[1:]...)
	if _, _, err := ix.Set(loader(tampered)); err == nil || !strings.Contains(err.Error(), "does not match its digest") {
		t.Errorf("a tampered piece: err = %v", err)
	}
	if _, _, err := ix.Set(loader(enc.Pieces[1:])); err == nil {
		t.Error("a missing piece must be an error")
	}
}

// Records that hold the same CRDs share their pieces: a new revision that
// changes a value stores the objects again, not the CRDs, and the same
// render in another revision stores nothing new.
func TestRecordPiecesAreShared(t *testing.T) {
	first, err := Encode(bigRecord(t, 16, 250<<10, "a"))
	if err != nil {
		t.Fatal(err)
	}
	next := bigRecord(t, 16, 250<<10, "b")
	next.Revision = 2
	second, err := Encode(next)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, p := range first.Pieces {
		have[p.Digest] = true
	}
	var fresh []Piece
	for _, p := range second.Pieces {
		if !have[p.Digest] {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) != 1 || len(fresh[0].Data) > 1<<10 {
		t.Fatalf("revision 2 changes one ConfigMap value but adds %d new pieces", len(fresh))
	}
	same := bigRecord(t, 16, 250<<10, "a")
	same.Revision = 3
	third, err := Encode(same)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(third.Pieces, first.Pieces) {
		t.Error("the same set in another revision must have the same pieces")
	}
}

func TestRecordTooLarge(t *testing.T) {
	// A rendered set over MaxSize.
	huge := Record{Objects: []*unstructured.Unstructured{{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "huge"},
		"data": map[string]any{"v": strings.Repeat("x", MaxSize)},
	}}}}
	_, err := Encode(huge)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != MaxSize || !strings.Contains(err.Error(), "the rendered set is 128.0 MiB") {
		t.Errorf("a set over MaxSize: err = %v", err)
	}

	// An inventory too large for one index.
	var inv Record
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 60000 {
		inv.Inventory = append(inv.Inventory, v1alpha1.ObjectReference{Version: "v1", Kind: "ConfigMap", Namespace: "demo",
			Name: fmt.Sprintf("c-%d-%x%x", i, rng.Uint64(), rng.Uint64())})
	}
	_, err = Encode(inv)
	if !errors.As(err, &tooLarge) || tooLarge.Limit != MaxIndexSize || !strings.Contains(err.Error(), "an inventory of 60000 objects") {
		t.Errorf("an index over MaxIndexSize: err = %v", err)
	}
}
