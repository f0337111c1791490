package manager

import (
	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/controller/installation"
	"github.com/annex-platform/annex/internal/record"
)

// recordCodec stores revision records in internal/record's compact format.
type recordCodec struct{}

func (recordCodec) Encode(rev v1alpha1.Revision, inventory []v1alpha1.ObjectReference, set installation.Set) (installation.EncodedRecord, error) {
	enc, err := record.Encode(record.Record{
		Revision: rev.Number, Version: rev.Version,
		ValuesDigest: rev.ValuesDigest, ManifestDigest: rev.ManifestDigest,
		Inventory: inventory, CRDs: set.CRDs, Objects: set.Objects,
		Package: set.Package,
	})
	if err != nil {
		return installation.EncodedRecord{}, err
	}
	out := installation.EncodedRecord{Index: enc.Index, Pieces: make([]installation.RecordPiece, len(enc.Pieces))}
	for i, p := range enc.Pieces {
		out.Pieces[i] = installation.RecordPiece(p)
	}
	return out, nil
}

func (recordCodec) DecodeIndex(data []byte) (installation.RecordIndex, error) {
	ix, err := record.DecodeIndex(data)
	if err != nil {
		return installation.RecordIndex{}, err
	}
	return installation.RecordIndex{
		Version: ix.Version, ValuesDigest: ix.ValuesDigest, ManifestDigest: ix.ManifestDigest,
		Inventory: ix.Inventory,
		Package:   ix.Package,
		Pieces:    ix.Pieces(),
		Set: func(load func(digest string) ([]byte, error)) (installation.Set, error) {
			crds, objects, err := ix.Set(load)
			return installation.Set{CRDs: crds, Objects: objects, Package: ix.Package}, err
		},
	}, nil
}
