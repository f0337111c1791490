package pkg

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func boolPtr(b bool) *bool { return &b }

// paramsPackage has one parameter of every type, as the reader keeps
// them (scalar defaults as written text).
func paramsPackage() *Package {
	return &Package{
		Operator: Operator{Name: "db", OperatorVersion: "1.0.0", Plans: map[string]PlanSpec{"deploy": {}}},
		Params: Params{Parameters: []Param{
			{Name: "REPLICAS", Type: TypeInteger, Default: "3"},
			{Name: "VERSION", Default: "5.10"},
			{Name: "RATIO", Type: TypeNumber, Default: "0.5"},
			{Name: "TLS", Type: TypeBoolean, Default: "false"},
			{Name: "ARGS", Type: TypeArray, Default: []any{"-v", int64(2)}},
			{Name: "LABELS", Type: TypeMap, Default: map[string]any{"tier": "db"}},
			{Name: "CLASS", Required: boolPtr(false)},
			{Name: "PASSWORD"}, // required, no default
			{Name: "SIZE", Default: "10Gi", Immutable: boolPtr(true), Enum: []any{"10Gi", "20Gi"}},
			{Name: "MODE", Type: TypeInteger, Default: "1", Enum: []any{"1", "2"}},
		}},
	}
}

func TestResolve(t *testing.T) {
	defaults := map[string]any{
		"REPLICAS": "3", "VERSION": "5.10", "RATIO": "0.5", "TLS": "false",
		"ARGS": []any{"-v", int64(2)}, "LABELS": map[string]any{"tier": "db"},
		"CLASS": "", "PASSWORD": "pw", "SIZE": "10Gi", "MODE": "1",
	}
	withValues := func(changes map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range defaults {
			out[k] = v
		}
		for k, v := range changes {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name      string
		values    map[string]any
		installed map[string]any
		want      map[string]any
	}{
		// Defaults fill what values leave out; an optional parameter
		// without default is "" so templates can test it.
		{"defaults", map[string]any{"PASSWORD": "pw"}, nil, defaults},
		// KUDO's representation: scalar types are strings.
		{"integer from JSON number", map[string]any{"PASSWORD": "pw", "REPLICAS": 5.0}, nil, withValues(map[string]any{"REPLICAS": "5"})},
		{"integer from text", map[string]any{"PASSWORD": "pw", "REPLICAS": " 7 "}, nil, withValues(map[string]any{"REPLICAS": "7"})},
		{"integer from 3.0 text", map[string]any{"PASSWORD": "pw", "REPLICAS": "3.0"}, nil, withValues(map[string]any{"REPLICAS": "3"})},
		{"number", map[string]any{"PASSWORD": "pw", "RATIO": 2.5}, nil, withValues(map[string]any{"RATIO": "2.5"})},
		{"number text kept", map[string]any{"PASSWORD": "pw", "RATIO": "2.50"}, nil, withValues(map[string]any{"RATIO": "2.50"})},
		{"boolean", map[string]any{"PASSWORD": "pw", "TLS": true}, nil, withValues(map[string]any{"TLS": "true"})},
		{"boolean text", map[string]any{"PASSWORD": "pw", "TLS": "True"}, nil, withValues(map[string]any{"TLS": "true"})},
		{"string from number", map[string]any{"PASSWORD": "pw", "VERSION": 6.0}, nil, withValues(map[string]any{"VERSION": "6"})},
		// Lists and maps: structured, whole numbers int64, or YAML text.
		{"array", map[string]any{"PASSWORD": "pw", "ARGS": []any{"a", 1.0, 1.5}}, nil, withValues(map[string]any{"ARGS": []any{"a", int64(1), 1.5}})},
		{"array as YAML", map[string]any{"PASSWORD": "pw", "ARGS": "[a, 1]"}, nil, withValues(map[string]any{"ARGS": []any{"a", int64(1)}})},
		{"map as YAML", map[string]any{"PASSWORD": "pw", "LABELS": "a: b\nn: 1000000\n"}, nil, withValues(map[string]any{"LABELS": map[string]any{"a": "b", "n": int64(1000000)}})},
		// null means not given.
		{"null", map[string]any{"PASSWORD": "pw", "REPLICAS": nil}, nil, defaults},
		// Enum entries compare by representation: 2 matches "2".
		{"enum", map[string]any{"PASSWORD": "pw", "MODE": 2.0}, nil, withValues(map[string]any{"MODE": "2"})},
		// An immutable parameter left out keeps its installed value, even
		// though the default is another (KUDO pins it at install).
		{"immutable pinned", map[string]any{"PASSWORD": "pw"}, map[string]any{"SIZE": "20Gi"}, withValues(map[string]any{"SIZE": "20Gi"})},
		// Given again unchanged is fine.
		{"immutable same", map[string]any{"PASSWORD": "pw", "SIZE": "20Gi"}, map[string]any{"SIZE": "20Gi"}, withValues(map[string]any{"SIZE": "20Gi"})},
		// Added by an upgrade: installed lacks it, it takes its default
		// and is no violation (KUDO #1776).
		{"immutable added by upgrade", map[string]any{"PASSWORD": "pw"}, map[string]any{"REPLICAS": "3"}, defaults},
		// Installed values that went through JSON compare equal.
		{"installed via JSON", map[string]any{"PASSWORD": "pw", "SIZE": "10Gi"}, map[string]any{"SIZE": "10Gi", "ARGS": []any{"-v", 2.0}}, defaults},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(paramsPackage(), tt.values, tt.installed)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%#v\nwant\n%#v", got, tt.want)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name      string
		pkg       *Package
		values    map[string]any
		installed map[string]any
		// want is the error text, one line per *ParamError.
		want string
	}{
		{"integer", nil, map[string]any{"PASSWORD": "pw", "REPLICAS": "three"}, nil,
			`parameter REPLICAS: must be an integer (got "three"); set spec.values.REPLICAS to a whole number`},
		{"integer fraction", nil, map[string]any{"PASSWORD": "pw", "REPLICAS": 2.5}, nil,
			`parameter REPLICAS: must be an integer (got 2.5); set spec.values.REPLICAS to a whole number`},
		{"boolean", nil, map[string]any{"PASSWORD": "pw", "TLS": "maybe"}, nil,
			`parameter TLS: must be a boolean (got "maybe"); set spec.values.TLS to true or false`},
		{"number", nil, map[string]any{"PASSWORD": "pw", "RATIO": "half"}, nil,
			`parameter RATIO: must be a number (got "half"); set spec.values.RATIO to a number`},
		{"array", nil, map[string]any{"PASSWORD": "pw", "ARGS": map[string]any{"a": "b"}}, nil,
			`parameter ARGS: must be a list (got {"a":"b"}); set spec.values.ARGS to a list`},
		{"array bad YAML", nil, map[string]any{"PASSWORD": "pw", "ARGS": "[a"}, nil,
			`parameter ARGS: must be a list, and the text does not parse as YAML (did not find expected ',' or ']'); set spec.values.ARGS to a list`},
		{"string from map", nil, map[string]any{"PASSWORD": map[string]any{}}, nil,
			`parameter PASSWORD: must be text (got {}); set spec.values.PASSWORD to a text value`},
		// Required without default: the user must give it.
		{"required", nil, map[string]any{}, nil,
			`parameter PASSWORD: is required and has no default; set spec.values.PASSWORD`},
		{"enum", nil, map[string]any{"PASSWORD": "pw", "SIZE": "30Gi"}, nil,
			`parameter SIZE: must be one of "10Gi", "20Gi" (got "30Gi"); set spec.values.SIZE to one of them`},
		{"immutable", nil, map[string]any{"PASSWORD": "pw", "SIZE": "20Gi"}, map[string]any{"SIZE": "10Gi"},
			`parameter SIZE: is immutable and cannot change after install (installed "10Gi", requested "20Gi"); set spec.values.SIZE back to "10Gi"`},
		// Unknown names suggest close matches, whatever the case.
		{"unknown close", nil, map[string]any{"PASSWORD": "pw", "replicas": 3.0}, nil,
			`parameter replicas: is not a parameter of db 1.0.0; did you mean REPLICAS? Fix the name in spec.values or remove it`},
		{"unknown far", nil, map[string]any{"PASSWORD": "pw", "XYZZY": 3.0}, nil,
			`parameter XYZZY: is not a parameter of db 1.0.0; remove it from spec.values (the parameters are REPLICAS, VERSION, RATIO, TLS, ARGS, LABELS, CLASS, PASSWORD, SIZE, MODE)`},
		// Every problem at once: unknown names first, then in params.yaml order.
		{"several", nil, map[string]any{"REPLICAS": "x", "ZZ": 1.0}, nil, strings.Join([]string{
			`parameter ZZ: is not a parameter of db 1.0.0; remove it from spec.values (the parameters are REPLICAS, VERSION, RATIO, TLS, ARGS, LABELS, CLASS, PASSWORD, SIZE, MODE)`,
			`parameter REPLICAS: must be an integer (got "x"); set spec.values.REPLICAS to a whole number`,
			`parameter PASSWORD: is required and has no default; set spec.values.PASSWORD`,
		}, "\n")},
		// A broken default is the package's fault, and says so.
		{"bad default", &Package{Params: Params{Parameters: []Param{{Name: "N", Type: TypeInteger, Default: "many"}}}}, nil, nil,
			`parameter N: the package's default is invalid (must be an integer (got "many")); set spec.values.N to a whole number, and report it to the package's maintainers`},
		{"default not in enum", &Package{Params: Params{Parameters: []Param{{Name: "E", Default: "c", Enum: []any{"a", "b"}}}}}, nil, nil,
			`parameter E: must be one of "a", "b" (got "c"); set spec.values.E to one of them, and report the default to the package's maintainers`},
		{"bad type", &Package{Params: Params{Parameters: []Param{{Name: "T", Type: "int"}}}}, map[string]any{"T": 1.0}, nil,
			`parameter T: has type "int", which is not a parameter type; the package's params.yaml must use string, integer, number, boolean, array or map`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.pkg
			if p == nil {
				p = paramsPackage()
			}
			_, err := Resolve(p, tt.values, tt.installed)
			if err == nil {
				t.Fatal("no error")
			}
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("err is %T, want *ParamError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("err =\n%s\nwant\n%s", err, tt.want)
			}
		})
	}
}

// The full test package resolves with its defaults.
func TestResolveFullPackage(t *testing.T) {
	p, err := LoadDir(os.DirFS("testdata/packages/full"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got["VERSION"] != "5.10" || got["NODE_COUNT"] != "3" || got["MONITORING"] != "false" || got["STORAGE_CLASS"] != "" {
		t.Errorf("params = %v", got)
	}
}

func TestChanged(t *testing.T) {
	p := &Package{Params: Params{Parameters: []Param{
		{Name: "A", Default: "1"},
		{Name: "B", Type: TypeArray, Default: []any{"x"}},
		{Name: "NEW", Default: "d"},
		{Name: "NEW_LIST", Type: TypeArray},
	}}}
	tests := []struct {
		name     string
		old, new map[string]any
		want     []string
	}{
		// Nothing differs.
		{"same", map[string]any{"A": "1", "B": []any{"x"}}, map[string]any{"A": "1", "B": []any{"x"}}, nil},
		// Values that went through JSON (float64) equal fresh ones (int64).
		{"json numbers", map[string]any{"B": []any{2.0}}, map[string]any{"B": []any{int64(2)}}, nil},
		// In params.yaml order, not the maps'.
		{"order", map[string]any{"A": "1", "B": []any{"x"}}, map[string]any{"A": "2", "B": []any{"y"}}, []string{"A", "B"}},
		// Added by an upgrade with its default: appeared, not changed
		// (KUDO PR #1780); with another value: changed.
		{"added with default", map[string]any{"A": "1"}, map[string]any{"A": "1", "NEW": "d", "NEW_LIST": []any{}}, nil},
		{"added with value", map[string]any{"A": "1"}, map[string]any{"A": "1", "NEW": "e"}, []string{"NEW"}},
		// Removed by an upgrade, and names the package does not declare,
		// come last, sorted.
		{"removed", map[string]any{"A": "1", "OLD2": "x", "OLD1": "y"}, map[string]any{"A": "1"}, []string{"OLD1", "OLD2"}},
		{"declared but dropped", map[string]any{"A": "1"}, map[string]any{}, []string{"A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Changed(p, tt.old, tt.new); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Changed = %v, want %v", got, tt.want)
			}
		})
	}
}
