package helm

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// fastCases are YAML shapes the fast decoder must read exactly as yaml.v3
// does (or refuse with errFallback).
var fastCases = []string{
	// The layout `helm repo index` writes.
	"apiVersion: v1\nentries:\n  a:\n  - apiVersion: v2\n    name: a\n    version: 1.0.0\n    urls:\n    - a-1.0.0.tgz\n    digest: abc\ngenerated: \"2024-01-01T00:00:00Z\"\n",
	// Sequences indented under their key, flow lists, quoted scalars, comments.
	"apiVersion: v1 # comment\nentries:\n  # comment\n  b:\n    - name: 'b'\n      version: \"1.0.0\"\n      keywords: [x, \"y\", 'z']\n      urls: [b.tgz]\n      description: \"tab\\there \\u00e9\"\n",
	// Block scalars: literal, folded, chomping indicators.
	"apiVersion: v1\nentries:\n  c:\n  - name: c\n    version: 1.0.0\n    description: >-\n      one\n      two\n\n      three\n    annotations:\n      annex.dev/dependencies: |\n        - name: base\n          version: \">=1.0.0\"\n      keep: |+\n        x\n\n      strip: |-\n        y\n    urls: [c.tgz]\n",
	// Null and boolean values, empty flow collections.
	"apiVersion: v1\nentries:\n  d:\n  - name: d\n    version: 1.0.0\n    deprecated: true\n    home: ~\n    icon:\n    keywords: []\n    annotations: {}\n    urls: [d.tgz]\n  e: null\n",
	// Plain scalars that look like other types stay text.
	"apiVersion: v1\nentries:\n  f:\n  - name: f\n    version: 1.10\n    appVersion: 0x1F\n    urls: [f.tgz]\n",
	// Long plain scalars wrapped over several lines, as yaml.v2 writes them.
	"apiVersion: v1\nentries:\n  h:\n  - name: h\n    version: 1.0.0\n    description: a\n      b\n\n      c\n    keywords:\n    - one\n      two\n    urls: [h.tgz]\n",
	// Package entries: operatorVersion, kubernetesVersion, removed and the
	// extends mapping, flat, nested under kudo, in flow style and null.
	"apiVersion: v1\nentries:\n  p:\n  - name: p\n    operatorVersion: 0.1.0\n    kubernetesVersion: 1.30.0\n    removed: true\n    extends:\n      operator: base\n      version: \">=1.0.0 <2.0.0\"\n      other: ignored\n    urls: [p.tgz]\n  - name: p\n    operatorVersion: 0.2.0\n    extends:\n      kudo:\n        operator: base\n        version: 5.7\n    urls: [p.tgz]\n  - name: p\n    operatorVersion: 0.3.0\n    extends: ~\n    removed:\n    urls: [p.tgz]\n",
	// Things only yaml.v3 reads: anchors, multi-line plain scalars, tags.
	"apiVersion: v1\nentries:\n  g:\n  - &x\n    name: g\n    version: 1.0.0\n    urls: [g.tgz]\n",
	"apiVersion: v1\nentries:\n  h:\n  - name: h\n    version: 1.0.0\n    description: a # c\n      b\n    urls: [h.tgz]\n",
	"apiVersion: !!str v1\nentries: {}\n",
}

// TestFastDecoderMatchesYAMLv3 checks that whatever the fast decoder
// accepts, it decodes as yaml.v3 does.
func TestFastDecoderMatchesYAMLv3(t *testing.T) {
	inputs := append([]string(nil), fastCases...)
	for _, name := range []string{"index.yaml", "index-reordered.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, string(data))
	}
	fast := 0
	for i, in := range inputs {
		if compareDecoders(t, in) {
			fast++
		} else if i < 7 {
			t.Errorf("case %d: the fast decoder fell back on YAML it should read:\n%s", i, in)
		}
	}
	if fast == len(inputs) {
		t.Error("no case fell back; the cases that need yaml.v3 are not exercised")
	}
}

// compareDecoders fails t when the fast decoder's result differs from
// yaml.v3's, and reports whether the fast decoder read the input.
func compareDecoders(t *testing.T, in string) bool {
	t.Helper()
	apiF, chartsF, errF := decodeIndexFast(in)
	if errF != nil {
		return false
	}
	apiS, chartsS, errS := decodeIndexSlow([]byte(in))
	if errS != nil {
		t.Fatalf("the fast decoder read what yaml.v3 refuses (%v):\n%q", errS, in)
	}
	norm := func(cs []rawChart) []rawChart {
		if len(cs) == 0 {
			return nil
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
		for i := range cs {
			if len(cs[i].entries) == 0 {
				cs[i].entries = nil
			}
			for j := range cs[i].entries {
				e := &cs[i].entries[j].entry
				if len(e.Keywords) == 0 {
					e.Keywords = nil
				}
				if len(e.URLs) == 0 {
					e.URLs = nil
				}
				// The fast decoder keeps only the annotations Annex reads.
				for k := range e.Annotations {
					if k != v1alpha1.AnnotationDependencies && k != v1alpha1.AnnotationDisplayName {
						delete(e.Annotations, k)
					}
				}
				if len(e.Annotations) == 0 {
					e.Annotations = nil
				}
			}
		}
		return cs
	}
	if apiF != apiS || !reflect.DeepEqual(norm(chartsF), norm(chartsS)) {
		t.Fatalf("decoders differ on %q:\nfast %q %+v\nyaml %q %+v", in, apiF, chartsF, apiS, chartsS)
	}
	return true
}

// FuzzFastDecoder is a differential fuzz target: the fast decoder must
// agree with yaml.v3 on every input it accepts. Run it longer with
//
//	go test ./internal/catalog/helm -run '^$' -fuzz FuzzFastDecoder -fuzztime 10m
func FuzzFastDecoder(f *testing.F) {
	for _, c := range fastCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, in string) {
		compareDecoders(t, in)
	})
}
