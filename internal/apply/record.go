package apply

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// RecordFormat is the format version EncodeRecord writes and DecodeRecord
// reads.
const RecordFormat = 1

// MaxRecordSize bounds the decompressed size of a record DecodeRecord
// accepts, so that a corrupt or hostile Secret cannot exhaust memory.
const MaxRecordSize = 64 << 20

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
}

// Set returns the rendered set the record holds.
func (r Record) Set() Set { return Set{CRDs: r.CRDs, Objects: r.Objects} }

// recordEnvelope carries the format version next to the record.
type recordEnvelope struct {
	Format int    `json:"format"`
	Record Record `json:"record"`
}

// gzipWriters keeps compressors for EncodeRecord: each holds about a
// megabyte of state that would otherwise be allocated for every record.
var gzipWriters = sync.Pool{New: func() any {
	zw, err := gzip.NewWriterLevel(nil, gzip.BestCompression)
	if err != nil {
		panic(err) // the level is a valid constant
	}
	return zw
}}

// EncodeRecord returns r as gzip-compressed JSON. The output is the same
// for equal records.
func EncodeRecord(r Record) ([]byte, error) {
	data, err := json.Marshal(recordEnvelope{Format: RecordFormat, Record: r})
	if err != nil {
		return nil, fmt.Errorf("encode revision %d record: %w", r.Revision, err)
	}
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, fmt.Errorf("compress revision %d record: %w", r.Revision, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress revision %d record: %w", r.Revision, err)
	}
	return buf.Bytes(), nil
}

// DecodeRecord reads what EncodeRecord wrote. It fails when data is not
// gzip, decompresses to more than MaxRecordSize, is not a record, or has
// another format version than RecordFormat.
func DecodeRecord(data []byte) (Record, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return Record{}, fmt.Errorf("decode revision record: not gzip data: %w", err)
	}
	defer zr.Close()
	raw, err := io.ReadAll(io.LimitReader(zr, MaxRecordSize+1))
	if err != nil {
		return Record{}, fmt.Errorf("decode revision record: %w", err)
	}
	if len(raw) > MaxRecordSize {
		return Record{}, fmt.Errorf("decode revision record: larger than %d bytes decompressed", MaxRecordSize)
	}
	var env recordEnvelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return Record{}, fmt.Errorf("decode revision record: %w", err)
	}
	if env.Format != RecordFormat {
		return Record{}, fmt.Errorf("decode revision record: format %d, want %d; it was written by another version of Annex", env.Format, RecordFormat)
	}
	for _, o := range append(env.Record.CRDs, env.Record.Objects...) {
		if o == nil {
			return Record{}, errors.New("decode revision record: a manifest is null")
		}
	}
	return env.Record, nil
}
