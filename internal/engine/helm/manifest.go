package helm

import (
	"bytes"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// hookAnnotation marks a Helm hook; its value is a comma-separated list of events.
const hookAnnotation = "helm.sh/hook"

// testHookEvents are the hook events of `helm test`. Annex does not run chart
// tests, so objects that exist only for them are dropped.
var testHookEvents = map[string]bool{"test": true, "test-success": true, "test-failure": true}

// splitDocuments splits a YAML stream at document separator lines: "---"
// alone or followed by whitespace or a comment.
func splitDocuments(stream string) []string {
	var docs []string
	var cur strings.Builder
	for line := range strings.Lines(stream) {
		if isSeparator(line) {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(docs, cur.String())
}

func isSeparator(line string) bool {
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "---")
	if !ok {
		return false
	}
	rest = strings.TrimLeft(rest, " \t")
	return rest == "" || strings.HasPrefix(rest, "#")
}

// parseObjects decodes the documents of one rendered file (or CRD file) into
// objects, in document order. Empty and comment-only documents are skipped.
// The error says which document is wrong and why; the caller adds the file.
func parseObjects(content string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for i, doc := range splitDocuments(content) {
		obj, err := parseObject(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if obj != nil {
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// parseObject decodes one YAML document; it returns nil for an empty one.
func parseObject(doc string) (*unstructured.Unstructured, error) {
	raw, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("is not a Kubernetes object: a YAML mapping with apiVersion, kind and metadata is expected")
	}
	// utiljson decodes integers as int64, as the API machinery expects.
	var m map[string]any
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	obj := &unstructured.Unstructured{Object: m}
	if err := checkIdentity(m); err != nil {
		return nil, err
	}
	return obj, nil
}

// checkIdentity requires what an applier needs to address an object.
func checkIdentity(m map[string]any) error {
	var missing []string
	if s, _ := m["apiVersion"].(string); s == "" {
		missing = append(missing, "apiVersion")
	}
	kind, _ := m["kind"].(string)
	if kind == "" {
		missing = append(missing, "kind")
	}
	meta, _ := m["metadata"].(map[string]any)
	if s, _ := meta["name"].(string); s == "" {
		missing = append(missing, "metadata.name")
	}
	if len(missing) == 0 {
		return nil
	}
	what := "object"
	if kind != "" {
		what = kind
	}
	return fmt.Errorf("%s has no %s; every object needs apiVersion, kind and metadata.name as non-empty strings", what, strings.Join(missing, ", "))
}

// isTestHook reports whether obj is a Helm hook run only by `helm test`.
func isTestHook(obj *unstructured.Unstructured) bool {
	value, ok := obj.GetAnnotations()[hookAnnotation]
	if !ok {
		return false
	}
	events := strings.Split(value, ",")
	for _, e := range events {
		if !testHookEvents[strings.TrimSpace(e)] {
			return false
		}
	}
	return true
}
