// Package record keeps revision records: the codec that turns a record
// into what is stored and back (Encode, DecodeIndex; pure, no I/O), the
// decisions over recorded revisions (Next, UpToDate; pure), the
// Store that keeps an installation's records and their pieces in Secrets of
// its namespace through the client it is given, and the Keeper that
// writes, takes over and deletes them so that a crash at any instant
// orphans nothing (keeper.go states the invariant).
package record

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/values"
)

// Format is the format version Encode writes. DecodeIndex reads it and
// format 1 (every record inline, Annex before records had pieces).
const Format = 2

const (
	// MaxSize bounds a record's JSON, decompressed: the rendered set
	// and the inventory. It is above what the archive limits let a chart
	// expand to (100 MiB), and it keeps a corrupt or hostile record from
	// exhausting memory.
	MaxSize = 128 << 20
	// InlineSetLimit is the largest rendered set (its JSON, in bytes) a
	// record's index holds itself. A larger set goes into pieces: one more
	// Secret write per piece, paid back by storing each piece once.
	InlineSetLimit = 256 << 10
	// PieceSize is the largest piece. A Secret holds at most 1 MiB of data;
	// the rest is room for its metadata.
	PieceSize = 768 << 10
	// MaxIndexSize bounds a record's index (compressed), which is one
	// Secret: the inventory and, for a small set, the set itself.
	MaxIndexSize = 960 << 10
)

// Record is one revision of an installation: enough to roll back to it, or
// to uninstall it after a crash, without rendering the chart again.
type Record struct {
	// Revision counts applies that changed the rendered set, from 1.
	Revision int64 `json:"revision"`
	// Version of the extension.
	Version string `json:"version"`
	// ValuesDigest and ManifestDigest are the renderer's digests.
	ValuesDigest   string `json:"valuesDigest"`
	ManifestDigest string `json:"manifestDigest"`
	// Inventory is what the revision applied.
	Inventory []v1alpha1.ObjectReference `json:"inventory,omitempty"`
	// CRDs and Objects are the rendered set, hooks included.
	CRDs    []*unstructured.Unstructured `json:"crds,omitempty"`
	Objects []*unstructured.Unstructured `json:"objects,omitempty"`
	// Package is the package engine's own part of the record (its
	// parameters, its cleanup plan): opaque here, always in the index.
	Package json.RawMessage `json:"package,omitempty"`
	// Adopted is, in the record of the revision that adopted what another
	// tool installed (spec.adopt), what it took over, with the other
	// tool's last manifest: the release's storage is deleted afterwards,
	// and this is what remains of it.
	Adopted *Adopted `json:"adopted,omitempty"`
}

// Adopted is a Helm release a revision adopted: its name, namespace,
// revision, chart, and its last manifest as Helm applied it (hooks
// excluded).
type Adopted struct {
	Kind             string `json:"kind"`
	Name             string `json:"name"`
	Namespace        string `json:"namespace"`
	StorageNamespace string `json:"storageNamespace,omitempty"`
	Revision         int64  `json:"revision"`
	Chart            string `json:"chart"`
	Version          string `json:"version"`
	Manifest         string `json:"manifest,omitempty"`
}

// AdoptedBy is what the record of the revision that adopted t keeps of
// it; nil when t is nil (nothing adopted).
func AdoptedBy(t *adopt.Takeover) *Adopted {
	if t == nil {
		return nil
	}
	from := t.From(metav1.Time{})
	a := &Adopted{Kind: from.Kind, Name: from.Name, Namespace: from.Namespace, Chart: from.Chart, Version: from.Version}
	if rel := t.Release; rel != nil {
		a.StorageNamespace, a.Revision, a.Manifest = t.StorageNamespace, int64(rel.Revision), rel.Manifest
	}
	return a
}

// Encoded is a record ready to be stored. Index is stored under the
// revision's own name; each piece under its digest, so that every record
// holding the same bytes (the same CRDs in ten revisions, the same chart
// rendered alike on a thousand clusters) shares one copy.
type Encoded struct {
	Index  []byte
	Pieces []Piece
}

// Piece is a part of a record's rendered set, named by its content.
type Piece struct {
	// Digest is "sha256:<hex>" of Data.
	Digest string
	Data   []byte
}

// Index is what a record's index holds: the whole record when its
// set is small, otherwise everything but the set, which is in the pieces
// listed.
type Index struct {
	Record
	// CRDPieces and ObjectPieces are the digests of the pieces whose
	// concatenations are the gzip'd JSON arrays of the set's CRDs and
	// objects; both empty when Record holds the set.
	CRDPieces, ObjectPieces []string
}

// Pieces returns the digests of every piece the index refers to.
func (ix Index) Pieces() []string {
	return append(append([]string(nil), ix.CRDPieces...), ix.ObjectPieces...)
}

// TooLargeError says that a record cannot be stored: what exceeded which
// limit. It is the same for the same rendered set, so retrying is useless.
type TooLargeError struct {
	What        string
	Size, Limit int
	Compressed  bool
}

func (e *TooLargeError) Error() string {
	unit := "bytes"
	if e.Compressed {
		unit = "bytes compressed"
	}
	return fmt.Sprintf("%s is %.1f MiB (%d %s); Annex stores at most %.1f MiB", e.What,
		float64(e.Size)/(1<<20), e.Size, unit, float64(e.Limit)/(1<<20))
}

// envelope carries the format version next to the record; Pieces is
// set when the set is stored in pieces.
type envelope struct {
	Format int        `json:"format"`
	Record Record     `json:"record"`
	Pieces *setPieces `json:"pieces,omitempty"`
}

type setPieces struct {
	CRDs    []string `json:"crds,omitempty"`
	Objects []string `json:"objects,omitempty"`
}

// gzipWriters keeps compressors for Encode: each holds about a
// megabyte of state that would otherwise be allocated for every record.
var gzipWriters = sync.Pool{New: func() any {
	zw, err := gzip.NewWriterLevel(nil, gzip.BestCompression)
	if err != nil {
		panic(err) // the level is a valid constant
	}
	return zw
}}

// compress returns data gzip'd. The output depends on data alone (no name,
// no time in the header), which is what lets equal sets share pieces.
func compress(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Encode returns r ready to store: gzip-compressed JSON, with the
// rendered set in pieces of at most PieceSize when its JSON is larger than
// InlineSetLimit. The output is the same for equal records. It fails with
// a *TooLargeError when the record's JSON exceeds MaxSize or its
// index MaxIndexSize.
func Encode(r Record) (Encoded, error) {
	crds, err := json.Marshal(r.CRDs)
	if err != nil {
		return Encoded{}, fmt.Errorf("encode revision %d record: %w", r.Revision, err)
	}
	objects, err := json.Marshal(r.Objects)
	if err != nil {
		return Encoded{}, fmt.Errorf("encode revision %d record: %w", r.Revision, err)
	}
	if size := len(crds) + len(objects); size > MaxSize {
		return Encoded{}, &TooLargeError{What: "the rendered set", Size: size, Limit: MaxSize}
	}
	env := envelope{Format: Format, Record: r}
	var out Encoded
	if len(crds)+len(objects) > InlineSetLimit {
		env.Record.CRDs, env.Record.Objects = nil, nil
		env.Pieces = &setPieces{}
		if env.Pieces.CRDs, err = out.addPieces(crds); err == nil {
			env.Pieces.Objects, err = out.addPieces(objects)
		}
		if err != nil {
			return Encoded{}, fmt.Errorf("compress revision %d record: %w", r.Revision, err)
		}
	}
	data, err := json.Marshal(env)
	if err != nil {
		return Encoded{}, fmt.Errorf("encode revision %d record: %w", r.Revision, err)
	}
	if len(data) > MaxSize {
		return Encoded{}, &TooLargeError{What: "the record", Size: len(data), Limit: MaxSize}
	}
	if out.Index, err = compress(data); err != nil {
		return Encoded{}, fmt.Errorf("compress revision %d record: %w", r.Revision, err)
	}
	if len(out.Index) > MaxIndexSize {
		return Encoded{}, &TooLargeError{What: fmt.Sprintf("the record's index (an inventory of %d objects)", len(r.Inventory)),
			Size: len(out.Index), Limit: MaxIndexSize, Compressed: true}
	}
	return out, nil
}

// addPieces compresses stream, cuts it into pieces of PieceSize, adds
// those not added yet and returns their digests in order.
func (e *Encoded) addPieces(stream []byte) ([]string, error) {
	data, err := compress(stream)
	if err != nil {
		return nil, err
	}
	var digests []string
	for len(data) > 0 {
		n := min(len(data), PieceSize)
		p := Piece{Digest: values.DigestBytes(data[:n]), Data: data[:n:n]}
		digests = append(digests, p.Digest)
		if !containsPiece(e.Pieces, p.Digest) {
			e.Pieces = append(e.Pieces, p)
		}
		data = data[n:]
	}
	return digests, nil
}

func containsPiece(pieces []Piece, digest string) bool {
	for _, p := range pieces {
		if p.Digest == digest {
			return true
		}
	}
	return false
}

// DecodeIndex reads a record's index. It fails when data is not gzip,
// decompresses to more than MaxSize, is not a record, or has a format
// version other than 1 or Format.
func DecodeIndex(data []byte) (Index, error) {
	raw, err := decompress(data)
	if err != nil {
		return Index{}, fmt.Errorf("decode revision record: %w", err)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return Index{}, fmt.Errorf("decode revision record: %w", err)
	}
	if env.Format != Format && env.Format != 1 {
		return Index{}, fmt.Errorf("decode revision record: format %d, want %d; it was written by another version of Annex", env.Format, Format)
	}
	if err := checkManifests(env.Record.CRDs, env.Record.Objects); err != nil {
		return Index{}, err
	}
	ix := Index{Record: env.Record}
	if env.Pieces != nil {
		if len(env.Record.CRDs)+len(env.Record.Objects) > 0 {
			return Index{}, errors.New("decode revision record: the set is both inline and in pieces")
		}
		ix.CRDPieces, ix.ObjectPieces = env.Pieces.CRDs, env.Pieces.Objects
	}
	return ix, nil
}

// Decode reads a record whose set is inline, as an index of a small set
// is; a record in pieces needs Index.Set.
func Decode(data []byte) (Record, error) {
	ix, err := DecodeIndex(data)
	if err != nil {
		return Record{}, err
	}
	if len(ix.CRDPieces)+len(ix.ObjectPieces) > 0 {
		return Record{}, errors.New("decode revision record: the set is in pieces; read them with Index.Set")
	}
	return ix.Record, nil
}

// Set returns the record's rendered set, its CRDs and its other objects,
// reading the pieces it refers to with load. A piece whose content does
// not match its digest, or streams that do not decode, are errors.
func (ix Index) Set(load func(digest string) ([]byte, error)) (crds, objects []*unstructured.Unstructured, err error) {
	if len(ix.CRDPieces)+len(ix.ObjectPieces) == 0 {
		return ix.CRDs, ix.Objects, nil
	}
	if crds, err = readStream(ix.CRDPieces, load); err != nil {
		return nil, nil, err
	}
	if objects, err = readStream(ix.ObjectPieces, load); err != nil {
		return nil, nil, err
	}
	return crds, objects, nil
}

func readStream(digests []string, load func(digest string) ([]byte, error)) ([]*unstructured.Unstructured, error) {
	var data []byte
	for _, d := range digests {
		p, err := load(d)
		if err != nil {
			return nil, fmt.Errorf("reading record piece %s: %w", d, err)
		}
		if values.DigestBytes(p) != d {
			return nil, fmt.Errorf("record piece %s: its content does not match its digest", d)
		}
		data = append(data, p...)
	}
	raw, err := decompress(data)
	if err != nil {
		return nil, fmt.Errorf("decode record pieces: %w", err)
	}
	var objs []*unstructured.Unstructured
	if err := json.Unmarshal(raw, &objs); err != nil {
		return nil, fmt.Errorf("decode record pieces: %w", err)
	}
	return objs, checkManifests(objs)
}

func decompress(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not gzip data: %w", err)
	}
	defer zr.Close()
	raw, err := io.ReadAll(io.LimitReader(zr, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxSize {
		return nil, fmt.Errorf("larger than %d bytes decompressed", MaxSize)
	}
	return raw, nil
}

func checkManifests(lists ...[]*unstructured.Unstructured) error {
	for _, l := range lists {
		for _, o := range l {
			if o == nil {
				return errors.New("decode revision record: a manifest is null")
			}
		}
	}
	return nil
}
