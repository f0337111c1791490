package apply

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// release returns a record of n objects that look like a real chart's:
// Deployments, Services and ConfigMaps with a few kilobytes of config.
func release(t *testing.T, n int) Record {
	t.Helper()
	r := Record{
		Revision:       7,
		Version:        "1.2.3",
		ValuesDigest:   "sha256:" + strings.Repeat("a", 64),
		ManifestDigest: "sha256:" + strings.Repeat("b", 64),
	}
	r.CRDs = objects(t, crdDoc("record.annex.dev"))
	for i := range n {
		var doc string
		switch i % 3 {
		case 0:
			doc = deploymentDoc("demo", 2)
			doc = strings.Replace(doc, "name: web,", fmt.Sprintf("name: web-%d,", i), 1)
		case 1:
			doc = fmt.Sprintf(`{apiVersion: v1, kind: Service, metadata: {name: svc-%d, namespace: demo}, spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}}`, i)
		default:
			doc = configMapDoc("demo", fmt.Sprintf("config-%d", i), strings.Repeat(fmt.Sprintf("setting-%d=value\n", i), 40))
		}
		obj := mustObject(t, doc)
		r.Objects = append(r.Objects, obj)
		r.Inventory = append(r.Inventory, refOf(obj))
	}
	return r
}

func TestRecordRoundTrip(t *testing.T) {
	want := release(t, 30)
	data, err := EncodeRecord(want)
	if err != nil {
		t.Fatal(err)
	}
	if len(data.Pieces) != 0 {
		t.Fatalf("a 30-object record was split into %d pieces", len(data.Pieces))
	}
	got, err := DecodeRecord(data.Index)
	if err != nil {
		t.Fatalf("DecodeRecord: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the record:\n got %+v\nwant %+v", got.Inventory, want.Inventory)
	}
	again, err := EncodeRecord(got)
	if err != nil || !bytes.Equal(again.Index, data.Index) {
		t.Errorf("encoding the same record twice gave different bytes (%v)", err)
	}
}

// A 200-object release must stay far from the 1 MiB a Secret can hold.
func TestRecordSize(t *testing.T) {
	data, err := EncodeRecord(release(t, 200))
	if err != nil {
		t.Fatal(err)
	}
	const limit = 100 << 10
	if len(data.Index) > limit || len(data.Pieces) > 0 {
		t.Errorf("a 200-object record takes %d bytes and %d pieces, want at most %d bytes and none", len(data.Index), len(data.Pieces), limit)
	}
	t.Logf("200-object record: %d bytes", len(data.Index))
}

func TestDecodeRecordErrors(t *testing.T) {
	gz := func(s string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(s))
		zw.Close()
		return buf.Bytes()
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		// Not compressed at all.
		{"not gzip", []byte(`{"format":1}`), "not gzip data"},
		// Compressed, but not JSON.
		{"not json", gz("revision 3"), "invalid character"},
		// A record of a future format is refused rather than misread.
		{"other format", gz(`{"format":3,"record":{"revision":1}}`), "format 3, want 2"},
		// A set both inline and in pieces is not a record Annex wrote.
		{"inline and pieces", gz(`{"format":2,"record":{"objects":[{"apiVersion":"v1","kind":"ConfigMap"}]},"pieces":{"objects":["sha256:00"]}}`), "both inline and in pieces"},
		// A null manifest would crash whoever applies the record.
		{"null object", gz(`{"format":1,"record":{"objects":[null]}}`), "a manifest is null"},
		// An object without a kind cannot be applied.
		{"object without kind", gz(`{"format":1,"record":{"objects":[{"apiVersion":"v1"}]}}`), "Kind' is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRecord(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("DecodeRecord error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzDecodeRecord(f *testing.F) {
	seed, err := EncodeRecord(Record{Revision: 1, Version: "1.0.0",
		Inventory: []v1alpha1.ObjectReference{{Version: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "c"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Index)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRecord(data)
		if err != nil {
			return
		}
		// Whatever decodes encodes again and decodes to the same set.
		again, err := EncodeRecord(r)
		if err != nil {
			t.Fatalf("EncodeRecord of a decoded record: %v", err)
		}
		ix, err := DecodeRecordIndex(again.Index)
		if err != nil {
			t.Fatalf("DecodeRecordIndex of a re-encoded record: %v", err)
		}
		if _, err := ix.Set(loader(again.Pieces)); err != nil {
			t.Fatalf("reading the set of a re-encoded record: %v", err)
		}
	})
}
