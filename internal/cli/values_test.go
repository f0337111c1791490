package cli_test

import (
	"reflect"
	"testing"

	"github.com/annex-platform/annex/internal/cli"
)

// SummarizeValues lists the schema's properties and values.yaml's keys
// with the defaults Helm would install with.
func TestSummarizeValues(t *testing.T) {
	for _, c := range []struct {
		name             string
		schema, defaults string
		want             []cli.SchemaProperty
		more             int
	}{{
		// values.yaml wins over the schema's default: Helm installs it.
		name:     "schema and values.yaml",
		schema:   `{"required":["message"],"properties":{"message":{"type":"string","description":"The greeting."},"replicas":{"type":"integer","default":1}}}`,
		defaults: `{"message":"hello","replicas":3}`,
		want: []cli.SchemaProperty{
			{Path: "message", Type: "string", Required: true, Default: `"hello"`, Description: "The greeting."},
			{Path: "replicas", Type: "integer", Default: "3"},
		},
	}, {
		// The schema's default shows where values.yaml sets nothing.
		name:     "schema default without values.yaml",
		schema:   `{"properties":{"replicas":{"type":"integer","default":1}}}`,
		defaults: `{}`,
		want: []cli.SchemaProperty{
			{Path: "replicas", Type: "integer", Default: "1"},
		},
	}, {
		// Keys values.yaml sets that the schema does not list are listed,
		// typed by their value; an object with keys has no default of its
		// own, an empty one has {}.
		name:     "values.yaml beyond the schema",
		schema:   `{"properties":{"image":{"type":"object","properties":{"tag":{"type":"string"}}}}}`,
		defaults: `{"image":{"tag":"1.0","repository":"ghcr.io/x"},"extraEnv":[],"selector":{},"ratio":0.5,"enabled":true,"nothing":null}`,
		want: []cli.SchemaProperty{
			{Path: "enabled", Type: "boolean", Default: "true"},
			{Path: "extraEnv", Type: "array", Default: "[]"},
			{Path: "image", Type: "object"},
			{Path: "image.repository", Type: "string", Default: `"ghcr.io/x"`},
			{Path: "image.tag", Type: "string", Default: `"1.0"`},
			{Path: "nothing", Type: "null", Default: "null"},
			{Path: "ratio", Type: "number", Default: "0.5"},
			{Path: "selector", Type: "object", Default: "{}"},
		},
	}, {
		// No schema: values.yaml alone, two levels deep, deeper keys
		// counted; a dot in a key is escaped as --set reads it.
		name:     "values.yaml only",
		defaults: `{"podAnnotations":{"prometheus.io/scrape":"true"},"resources":{"limits":{"cpu":"100m","memory":"1Gi"}}}`,
		want: []cli.SchemaProperty{
			{Path: "podAnnotations", Type: "object"},
			{Path: `podAnnotations.prometheus\.io/scrape`, Type: "string", Default: `"true"`},
			{Path: "resources", Type: "object"},
			{Path: "resources.limits", Type: "object"},
		},
		more: 2,
	}, {
		// Neither: nothing to list.
		name: "neither",
		want: []cli.SchemaProperty{},
	}} {
		t.Run(c.name, func(t *testing.T) {
			var schema, defaults []byte
			if c.schema != "" {
				schema = []byte(c.schema)
			}
			if c.defaults != "" {
				defaults = []byte(c.defaults)
			}
			got := cli.SummarizeValues(schema, defaults)
			if !reflect.DeepEqual(got.Properties, c.want) || got.More != c.more {
				t.Errorf("got %+v (%d more)\nwant %+v (%d more)", got.Properties, got.More, c.want, c.more)
			}
		})
	}
}
