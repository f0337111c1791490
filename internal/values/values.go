// Package values composes the values an installation gives its engine
// (merged, set by path, parsed from YAML) and digests them, and the sets
// an engine renders, as revisions record them. Pure: values in, values
// out.
package values

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Merge deep-merges overlay onto base and returns a new map: maps merge
// recursively, any other overlay value replaces the base value, and a nil
// overlay value deletes the key. Neither input is modified, and the result
// shares no maps or slices with them.
func Merge(base, overlay map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(overlay))
	for k, v := range base {
		out[k] = DeepCopy(v)
	}
	for k, v := range overlay {
		if v == nil {
			delete(out, k)
			continue
		}
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = Merge(bm, om)
				continue
			}
		}
		out[k] = DeepCopy(v)
	}
	return out
}

// Set sets the value at a dotted path such as "auth.password", creating
// intermediate maps as needed. A literal dot inside a key is written `\.`
// ("annotations.example\.com/team"). It fails when the path is empty, has an
// empty segment, or runs through a value that is not a map.
func Set(values map[string]any, path string, v any) error {
	if values == nil {
		return errors.New("cannot set a value in a nil map")
	}
	keys, err := splitPath(path)
	if err != nil {
		return err
	}
	m := values
	for i, k := range keys[:len(keys)-1] {
		next, ok := m[k]
		if !ok || next == nil {
			child := map[string]any{}
			m[k] = child
			m = child
			continue
		}
		child, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("cannot set %q: %q is a %s, not a map", path, joinPath(keys[:i+1]), jsonKind(next))
		}
		m = child
	}
	m[keys[len(keys)-1]] = v
	return nil
}

// splitPath splits a dotted path, honouring `\.` as a literal dot.
func splitPath(path string) ([]string, error) {
	if path == "" {
		return nil, errors.New("empty values path")
	}
	var keys []string
	var cur strings.Builder
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path) && path[i+1] == '.':
			cur.WriteByte('.')
			i++
		case path[i] == '.':
			keys = append(keys, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(path[i])
		}
	}
	keys = append(keys, cur.String())
	for _, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("values path %q has an empty segment", path)
		}
	}
	return keys, nil
}

// joinPath is the inverse of splitPath.
func joinPath(keys []string) string {
	escaped := make([]string, len(keys))
	for i, k := range keys {
		escaped[i] = strings.ReplaceAll(k, ".", `\.`)
	}
	return strings.Join(escaped, ".")
}

// ParseYAML parses one YAML document of values, such as the content of
// a valuesFrom key. Empty input (or only comments) yields an empty map. The
// document must be a mapping; numbers decode as float64, as in Helm's values
// files.
func ParseYAML(data []byte) (map[string]any, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("values are not valid YAML: %w", err)
	}
	switch doc := doc.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return doc, nil
	default:
		return nil, fmt.Errorf("values must be a YAML mapping of keys to values, got %s", jsonKind(doc))
	}
}

// Normalize turns caller-supplied values into the JSON data model
// (map[string]any, []any, string, float64, bool, nil) that Helm's values
// files produce, so that templates, the schema validator and the digests see
// one representation whatever Go types the caller used.
func Normalize(values map[string]any) (map[string]any, error) {
	if values == nil {
		return map[string]any{}, nil
	}
	raw, err := json.Marshal(values)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// digestJSON returns "sha256:<hex>" of the canonical JSON encoding of v
// (encoding/json sorts map keys, so equal values give equal digests).
func digestJSON(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return DigestBytes(raw), nil
}

// DigestBytes is "sha256:<hex>" of b: how a revision records its
// artifact's digest, and its values' digest of their canonical JSON.
func DigestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// DeepCopy copies maps and slices of the JSON data model; other values are
// returned as they are.
func DeepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = DeepCopy(e)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = DeepCopy(e)
		}
		return out
	default:
		return v
	}
}

// jsonKind names the JSON type of v for error messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "map"
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, json.Number:
		return "number"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// Digest returns "sha256:<hex>" of the canonical JSON of v: the digest
// every engine records for its effective values.
func Digest(v any) (string, error) { return digestJSON(v) }

// ManifestDigest is the digest of a rendered set, CRDs then objects (a
// chart's Result.ManifestDigest; a plan's set has no CRDs): it hashes the
// canonical JSON of every object, one per line, under a header per
// section, so that moving an object between CRDs and objects changes it.
func ManifestDigest(crds, objects []*unstructured.Unstructured) (string, error) {
	var buf bytes.Buffer
	for _, section := range []struct {
		header  string
		objects []*unstructured.Unstructured
	}{{"# crds\n", crds}, {"# objects\n", objects}} {
		buf.WriteString(section.header)
		for _, o := range section.objects {
			raw, err := json.Marshal(o.Object)
			if err != nil {
				return "", err
			}
			buf.Write(raw)
			buf.WriteByte('\n')
		}
	}
	return DigestBytes(buf.Bytes()), nil
}
