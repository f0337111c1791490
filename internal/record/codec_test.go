package record

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

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
	r.CRDs = []*unstructured.Unstructured{manifest(t, `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition,
  metadata: {name: greetings.record.annex.dev},
  spec: {group: record.annex.dev, scope: Namespaced, names: {kind: Greeting, plural: greetings, singular: greeting, listKind: GreetingList},
    versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object,
      properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}}]}}`)}
	for i := range n {
		var doc string
		switch i % 3 {
		case 0:
			doc = fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web-%d, namespace: demo},
  spec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}},
    spec: {serviceAccountName: web, containers: [{name: web, image: "registry.example/web:1.0"}]}}}}`, i)
		case 1:
			doc = fmt.Sprintf(`{apiVersion: v1, kind: Service, metadata: {name: svc-%d, namespace: demo}, spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}}`, i)
		default:
			doc = fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: config-%d, namespace: demo}, data: {key: %q}}`,
				i, strings.Repeat(fmt.Sprintf("setting-%d=value\n", i), 40))
		}
		obj := manifest(t, doc)
		r.Objects = append(r.Objects, obj)
		r.Inventory = append(r.Inventory, refOf(obj))
	}
	return r
}

// manifest reads an object written in YAML through JSON, so that its
// numbers are int64 as a decoded record's are.
func manifest(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err == nil {
		err = obj.UnmarshalJSON(data)
	}
	if err != nil {
		t.Fatalf("parse test object: %v", err)
	}
	return obj
}

// refOf is the inventory entry of o.
func refOf(o *unstructured.Unstructured) v1alpha1.ObjectReference {
	gvk := o.GroupVersionKind()
	return v1alpha1.ObjectReference{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}
}

func TestRecordRoundTrip(t *testing.T) {
	want := release(t, 30)
	data, err := Encode(want)
	if err != nil {
		t.Fatal(err)
	}
	if len(data.Pieces) != 0 {
		t.Fatalf("a 30-object record was split into %d pieces", len(data.Pieces))
	}
	got, err := Decode(data.Index)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip changed the record:\n got %+v\nwant %+v", got.Inventory, want.Inventory)
	}
	again, err := Encode(got)
	if err != nil || !bytes.Equal(again.Index, data.Index) {
		t.Errorf("encoding the same record twice gave different bytes (%v)", err)
	}
}

// A 200-object release must stay far from the 1 MiB a Secret can hold.
func TestRecordSize(t *testing.T) {
	data, err := Encode(release(t, 200))
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
			_, err := Decode(tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func FuzzDecodeRecord(f *testing.F) {
	seed, err := Encode(Record{Revision: 1, Version: "1.0.0",
		Inventory: []v1alpha1.ObjectReference{{Version: "v1", Kind: "ConfigMap", Namespace: "demo", Name: "c"}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed.Index)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			return
		}
		// Whatever decodes encodes again and decodes to the same set.
		again, err := Encode(r)
		if err != nil {
			t.Fatalf("Encode of a decoded record: %v", err)
		}
		ix, err := DecodeIndex(again.Index)
		if err != nil {
			t.Fatalf("DecodeIndex of a re-encoded record: %v", err)
		}
		if _, _, err := ix.Set(loader(again.Pieces)); err != nil {
			t.Fatalf("reading the set of a re-encoded record: %v", err)
		}
	})
}
