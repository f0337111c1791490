package console

import (
	"net/url"
	"reflect"
	"testing"
)

func TestFormFields(t *testing.T) {
	min0 := 0.0
	for _, tc := range []struct {
		name     string
		schema   string
		defaults string // values.yaml as JSON
		want     []Field
	}{{
		// No schema: no inputs, only the YAML box.
		name: "none", schema: "", want: nil,
	}, {
		// Required properties come first, then by path; each type gets
		// its input, and the schema's bounds and help go with it.
		name: "types",
		schema: `{"type":"object","required":["message"],"properties":{
			"replicas":{"type":"integer","minimum":0,"default":1},
			"message":{"type":"string","title":"Message","description":"The greeting."},
			"ratio":{"type":"number"},
			"enabled":{"type":"boolean"},
			"tags":{"type":"array","items":{"type":"string"}}}}`,
		want: []Field{
			{Path: "message", Input: "text", Required: true, Help: "Message The greeting."},
			{Path: "enabled", Input: "boolean"},
			{Path: "ratio", Input: "number"},
			{Path: "replicas", Input: "integer", Min: &min0, Default: "1"},
			{Path: "tags", Input: "yaml"},
		},
	}, {
		// Nested objects are walked into dotted paths; an object without
		// properties and a property of two types are YAML boxes.
		name: "nested",
		schema: `{"properties":{
			"image":{"type":"object","properties":{"tag":{"type":"string"},"pullPolicy":{"enum":["Always","IfNotPresent"]}}},
			"extra":{"type":"object"},
			"port":{"type":["integer","string"]},
			"nullable":{"type":["string","null"]}}}`,
		want: []Field{
			{Path: "extra", Input: "yaml"},
			{Path: "image.pullPolicy", Input: "enum", Options: []string{"Always", "IfNotPresent"}, enum: []any{"Always", "IfNotPresent"}},
			{Path: "image.tag", Input: "text"},
			{Path: "nullable", Input: "text"},
			{Path: "port", Input: "yaml"},
		},
	}, {
		// values.yaml gives the placeholders, nested ones too, and wins
		// over the schema's default (Helm installs values.yaml); a key values.yaml
		// sets that the schema does not list gets no field.
		name: "values.yaml defaults",
		schema: `{"properties":{
			"replicas":{"type":"integer","default":1},
			"image":{"type":"object","properties":{"tag":{"type":"string"}}},
			"tags":{"type":"array"}}}`,
		defaults: `{"replicas":3,"image":{"tag":"1.2"},"tags":["a"],"other":true}`,
		want: []Field{
			{Path: "image.tag", Input: "text", Default: "1.2"},
			{Path: "replicas", Input: "integer", Default: "3"},
			{Path: "tags", Input: "yaml", Default: `["a"]`},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FormFields([]byte(tc.schema), []byte(tc.defaults))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := FormFields([]byte(`[1]`), nil); err == nil {
		t.Error("a schema that is not an object gives no error")
	}
}

func TestValuesFromForm(t *testing.T) {
	fields, err := FormFields([]byte(`{"properties":{
		"message":{"type":"string"},"replicas":{"type":"integer"},"ratio":{"type":"number"},
		"enabled":{"type":"boolean"},"level":{"enum":[1,2,"high"]},
		"image":{"type":"object","properties":{"tag":{"type":"string"}}},
		"tags":{"type":"array"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		form       url.Values
		want       map[string]any
		wantErrors map[string]string
		wantYAML   string
	}{{
		// Empty fields are left out: the chart's defaults apply.
		name: "empty", form: url.Values{}, want: map[string]any{},
	}, {
		// Each input is read as its type; an enum value keeps the
		// schema's type (1 is a number, not "1").
		name: "typed",
		form: url.Values{"values.message": {" hi "}, "values.replicas": {"3"}, "values.ratio": {"0.5"},
			"values.enabled": {"false"}, "values.level": {"1"}, "values.image.tag": {"1.2"}, "values.tags": {"[a, b]"}},
		want: map[string]any{"message": "hi", "replicas": int64(3), "ratio": 0.5, "enabled": false, "level": float64(1),
			"image": map[string]any{"tag": "1.2"}, "tags": []any{"a", "b"}},
	}, {
		// The YAML box goes first; fields override it key by key.
		name: "yaml box under fields",
		form: url.Values{"values": {"image: {repository: x, tag: old}\nother: 1\n"}, "values.image.tag": {"new"}},
		want: map[string]any{"image": map[string]any{"repository": "x", "tag": "new"}, "other": float64(1)},
	}, {
		// Values that cannot be read name the field; nothing is returned.
		name: "errors",
		form: url.Values{"values.replicas": {"three"}, "values.enabled": {"maybe"}, "values.level": {"3"}},
		wantErrors: map[string]string{
			"replicas": `values.replicas: "three" is not a whole number`,
			"enabled":  `values.enabled: "maybe" is not true or false`,
			"level":    `values.level: "3" is not one of 1, 2, high`,
		},
	}, {
		// A YAML box that is not a mapping is an error of its own.
		name: "bad yaml box", form: url.Values{"values": {"- a\n- b"}},
		wantYAML: "other values: not a YAML mapping",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			values, filled, yamlErr := ValuesFromForm(fields, tc.form)
			errs := map[string]string{}
			for _, f := range filled {
				if f.Error != "" {
					errs[f.Path] = f.Error
				}
			}
			if tc.wantErrors == nil {
				tc.wantErrors = map[string]string{}
			}
			if !reflect.DeepEqual(errs, tc.wantErrors) {
				t.Errorf("errors: got %v, want %v", errs, tc.wantErrors)
			}
			if (yamlErr == "") != (tc.wantYAML == "") || (tc.wantYAML != "" && yamlErr[:len(tc.wantYAML)] != tc.wantYAML) {
				t.Errorf("YAML box error: got %q, want %q…", yamlErr, tc.wantYAML)
			}
			if len(tc.wantErrors) > 0 || tc.wantYAML != "" {
				if values != nil {
					t.Errorf("values %v returned despite errors", values)
				}
				return
			}
			if !reflect.DeepEqual(values, tc.want) {
				t.Errorf("values: got %#v, want %#v", values, tc.want)
			}
		})
	}
}
