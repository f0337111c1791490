package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// MergeValues deep-merges overlay onto base and returns a new map: maps merge
// recursively, any other overlay value replaces the base value, and a nil
// overlay value deletes the key. Neither input is modified, and the result
// shares no maps or slices with them.
func MergeValues(base, overlay map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(overlay))
	for k, v := range base {
		out[k] = deepCopy(v)
	}
	for k, v := range overlay {
		if v == nil {
			delete(out, k)
			continue
		}
		if om, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = MergeValues(bm, om)
				continue
			}
		}
		out[k] = deepCopy(v)
	}
	return out
}

// SetValue sets the value at a dotted path such as "auth.password", creating
// intermediate maps as needed. A literal dot inside a key is written `\.`
// ("annotations.example\.com/team"). It fails when the path is empty, has an
// empty segment, or runs through a value that is not a map.
func SetValue(values map[string]any, path string, v any) error {
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

// ParseValuesYAML parses one YAML document of values, such as the content of
// a valuesFrom key. Empty input (or only comments) yields an empty map. The
// document must be a mapping; numbers decode as float64, as in Helm's values
// files.
func ParseValuesYAML(data []byte) (map[string]any, error) {
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

// normalizeValues turns caller-supplied values into the JSON data model
// (map[string]any, []any, string, float64, bool, nil) that Helm's values
// files produce, so that templates, the schema validator and the digests see
// one representation whatever Go types the caller used.
func normalizeValues(values map[string]any) (map[string]any, error) {
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
	return digestBytes(raw), nil
}

func digestBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// deepCopy copies maps and slices of the JSON data model; other values are
// returned as they are.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
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

// DigestOf returns "sha256:<hex>" of the canonical JSON of v: the digest
// every engine records for its effective values.
func DigestOf(v any) (string, error) { return digestJSON(v) }

// ManifestDigestOf returns the digest of a set of objects as Result's
// ManifestDigest computes it for a chart without CRDs.
func ManifestDigestOf(objects []*unstructured.Unstructured) (string, error) {
	return manifestDigest(nil, objects)
}
