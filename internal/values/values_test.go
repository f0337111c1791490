package values

import (
	"reflect"
	"testing"
)

func TestMergeValues(t *testing.T) {
	tests := []struct {
		name                string
		base, overlay, want map[string]any
	}{{
		// Nested maps merge key by key.
		name:    "deep merge",
		base:    map[string]any{"a": map[string]any{"x": 1, "y": 2}, "b": 1},
		overlay: map[string]any{"a": map[string]any{"y": 3, "z": 4}},
		want:    map[string]any{"a": map[string]any{"x": 1, "y": 3, "z": 4}, "b": 1},
	}, {
		// Lists and scalars replace, never merge.
		name:    "lists replace",
		base:    map[string]any{"l": []any{1, 2}, "s": "a"},
		overlay: map[string]any{"l": []any{3}, "s": map[string]any{"now": "map"}},
		want:    map[string]any{"l": []any{3}, "s": map[string]any{"now": "map"}},
	}, {
		// A nil overlay value deletes the key, at any depth.
		name:    "nil deletes",
		base:    map[string]any{"a": map[string]any{"x": 1, "y": 2}, "b": 1},
		overlay: map[string]any{"a": map[string]any{"x": nil}, "b": nil, "c": nil},
		want:    map[string]any{"a": map[string]any{"y": 2}},
	}, {
		// Nil inputs are empty maps.
		name: "nil inputs",
		want: map[string]any{},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			baseBefore, overlayBefore := DeepCopy(tt.base), DeepCopy(tt.overlay)
			got := Merge(tt.base, tt.overlay)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Merge = %v, want %v", got, tt.want)
			}
			if !reflect.DeepEqual(tt.base, baseBefore) || !reflect.DeepEqual(tt.overlay, overlayBefore) {
				t.Errorf("inputs were modified")
			}
		})
	}

	// The result shares nothing with the inputs.
	base := map[string]any{"a": map[string]any{"x": 1}}
	got := Merge(base, nil)
	got["a"].(map[string]any)["x"] = 2
	if base["a"].(map[string]any)["x"] != 1 {
		t.Errorf("changing the result changed base")
	}
}

func TestSetValue(t *testing.T) {
	tests := []struct {
		name    string
		values  map[string]any
		path    string
		v       any
		want    map[string]any
		wantErr string
	}{{
		// Intermediate maps are created.
		name: "create path", values: map[string]any{}, path: "auth.password", v: "s3cret",
		want: map[string]any{"auth": map[string]any{"password": "s3cret"}},
	}, {
		// Existing siblings are kept and the leaf is replaced.
		name: "replace leaf", values: map[string]any{"auth": map[string]any{"user": "a", "password": "old"}}, path: "auth.password", v: "new",
		want: map[string]any{"auth": map[string]any{"user": "a", "password": "new"}},
	}, {
		// `\.` is a literal dot in a key.
		name: "escaped dot", values: map[string]any{}, path: `podAnnotations.example\.com/team`, v: "web",
		want: map[string]any{"podAnnotations": map[string]any{"example.com/team": "web"}},
	}, {
		// A null intermediate is replaced by a map.
		name: "null intermediate", values: map[string]any{"auth": nil}, path: "auth.user", v: "a",
		want: map[string]any{"auth": map[string]any{"user": "a"}},
	}, {
		// An intermediate that is not a map is an error.
		name: "through a scalar", values: map[string]any{"auth": "x"}, path: "auth.password", v: "s",
		wantErr: `cannot set "auth.password": "auth" is a string, not a map`,
	}, {
		// Empty segments are refused.
		name: "empty segment", values: map[string]any{}, path: "auth..password", v: "s",
		wantErr: `values path "auth..password" has an empty segment`,
	}, {
		// An empty path is refused.
		name: "empty path", values: map[string]any{}, path: "", v: "s",
		wantErr: "empty values path",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Set(tt.values, tt.path, tt.v)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tt.values, tt.want) {
				t.Errorf("values = %v, want %v", tt.values, tt.want)
			}
		})
	}
}

func TestParseValuesYAML(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    map[string]any
		wantErr string
	}{{
		// A mapping parses with numbers as float64, as in Helm values files.
		name: "mapping", data: "replicas: 3\nauth:\n  user: admin\n",
		want: map[string]any{"replicas": float64(3), "auth": map[string]any{"user": "admin"}},
	}, {
		// Empty input is an empty map.
		name: "empty", data: "", want: map[string]any{},
	}, {
		// Only comments is an empty map.
		name: "comments", data: "# nothing here\n", want: map[string]any{},
	}, {
		// null values are kept: they delete keys when merged.
		name: "null value", data: "a: null\n", want: map[string]any{"a": nil},
	}, {
		// A list at the top is not values.
		name: "list", data: "- a\n- b\n",
		wantErr: "values must be a YAML mapping of keys to values, got list",
	}, {
		// A scalar at the top is not values.
		name: "scalar", data: "hello\n",
		wantErr: "values must be a YAML mapping of keys to values, got string",
	}, {
		// Broken YAML says where.
		name: "syntax error", data: "a: [1, 2\n",
		wantErr: "values are not valid YAML: error converting YAML to JSON: yaml: line 1: did not find expected ',' or ']'",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseYAML([]byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseYAML = %#v, want %#v", got, tt.want)
			}
		})
	}
}
