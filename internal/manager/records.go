package manager

import (
	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/apply"
	"github.com/annex-platform/annex/internal/controller/installation"
)

// recordCodec stores revision records in apply's compact format.
type recordCodec struct{}

func (recordCodec) Encode(rev v1alpha1.Revision, inventory []v1alpha1.ObjectReference, set installation.Set) ([]byte, error) {
	return apply.EncodeRecord(apply.Record{
		Revision: rev.Number, Version: rev.Version,
		ValuesDigest: rev.ValuesDigest, ManifestDigest: rev.ManifestDigest,
		Inventory: inventory, CRDs: set.CRDs, Objects: set.Objects,
	})
}

func (recordCodec) Decode(data []byte) (installation.Set, []v1alpha1.ObjectReference, error) {
	r, err := apply.DecodeRecord(data)
	if err != nil {
		return installation.Set{}, nil, err
	}
	return installation.Set(r.Set()), r.Inventory, nil
}
