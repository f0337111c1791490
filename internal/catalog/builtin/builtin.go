// Package builtin is the catalog compiled into Annex: plain chart folders
// under charts/<name>-<version>/, embedded at build time. Its versions move
// only when Annex does.
//
// Index presents the charts exactly as a Helm repository would (it builds a
// Helm index from their Chart.yaml files and parses it with
// catalog.ParseHelmIndex), with URLs builtin://<name>/<version> that a
// catalog.Fetcher serves when its Builtin field is set to Archive.
package builtin

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/annex-platform/annex/internal/catalog"
)

// The all: prefix keeps files such as templates/_helpers.tpl, which go:embed
// leaves out by default.
//
//go:embed all:charts
var charts embed.FS

// chart is one embedded chart folder.
type chart struct {
	dir      string         // charts/<name>-<version>
	name     string         // Chart.yaml name
	version  string         // Chart.yaml version
	metadata map[string]any // Chart.yaml as written
}

// Index returns the built-in catalog's content: one Package per embedded
// chart, versions highest first, every Source.URL builtin://<name>/<version>
// with the digest of the archive Archive returns, Source.Catalog set to
// catalogName, ValuesSchema set from the chart's values.schema.json. Index.Digest covers the content independent of catalogName.
// An error means a broken embedded chart, a bug caught by this package's tests.
func Index(catalogName string) (*catalog.Index, error) {
	all, err := list()
	if err != nil {
		return nil, err
	}
	entries := map[string][]map[string]any{}
	for _, c := range all {
		data, err := archive(c)
		if err != nil {
			return nil, err
		}
		entry := make(map[string]any, len(c.metadata)+2)
		for k, v := range c.metadata {
			entry[k] = v
		}
		entry["urls"] = []string{"builtin://" + c.name + "/" + c.version}
		entry["digest"] = strings.TrimPrefix(catalog.Digest(data), "sha256:")
		entries[c.name] = append(entries[c.name], entry)
	}
	// Marshalling sorts map keys and list() sorts charts, so these bytes,
	// and with them Index.Digest, depend only on the embedded files.
	indexYAML, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": entries})
	if err != nil {
		return nil, fmt.Errorf("built-in catalog: %w", err)
	}
	index, err := catalog.ParseHelmIndex(indexYAML, "builtin://", catalogName)
	if err != nil {
		return nil, fmt.Errorf("built-in catalog: %w", err)
	}
	if len(index.Skipped) > 0 {
		return nil, fmt.Errorf("built-in catalog has invalid charts: %s", strings.Join(index.Skipped, "; "))
	}
	// Unlike a Helm index, the built-in catalog has each version's values
	// schema at hand; publishing it lets values be checked before a fetch.
	for i := range index.Packages {
		pkg := &index.Packages[i]
		for j := range pkg.Spec.Versions {
			v := &pkg.Spec.Versions[j]
			schema, err := valuesSchema(pkg.Name, v.Version)
			if err != nil {
				return nil, err
			}
			v.ValuesSchema = schema
		}
	}
	return index, nil
}

// valuesSchema returns the values.schema.json of one built-in version, nil
// when it has none.
func valuesSchema(name, version string) (*apiextensionsv1.JSON, error) {
	raw, err := charts.ReadFile(path.Join("charts", name+"-"+version, "values.schema.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("built-in chart %s %s: %w", name, version, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("built-in chart %s %s: values.schema.json: %w", name, version, err)
	}
	return &apiextensionsv1.JSON{Raw: compact.Bytes()}, nil
}

// Archive returns the chart archive (.tgz) of one built-in version. The
// bytes are the same on every call (sorted entries, zero mtimes), so their
// digest is the one Index reports. An unknown name or version is an error
// naming the versions that exist.
func Archive(name, version string) ([]byte, error) {
	all, err := list()
	if err != nil {
		return nil, err
	}
	var known []string
	for _, c := range all {
		if c.name == name && c.version == version {
			return archive(c)
		}
		if c.name == name {
			known = append(known, c.version)
		}
	}
	if len(known) == 0 {
		return nil, fmt.Errorf("built-in catalog has no extension %q", name)
	}
	return nil, fmt.Errorf("built-in extension %q has no version %q; it has %s", name, version, strings.Join(known, ", "))
}

// list reads every embedded chart's Chart.yaml, sorted by folder.
func list() ([]chart, error) {
	dirs, err := fs.ReadDir(charts, "charts")
	if err != nil {
		return nil, fmt.Errorf("built-in catalog: %w", err)
	}
	var all []chart
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := path.Join("charts", d.Name())
		raw, err := charts.ReadFile(path.Join(dir, "Chart.yaml"))
		if err != nil {
			return nil, fmt.Errorf("built-in chart %s: %w", d.Name(), err)
		}
		c := chart{dir: dir}
		if err := yaml.Unmarshal(raw, &c.metadata); err != nil {
			return nil, fmt.Errorf("built-in chart %s: Chart.yaml: %w", d.Name(), err)
		}
		c.name, _ = c.metadata["name"].(string)
		c.version, _ = c.metadata["version"].(string)
		if d.Name() != c.name+"-"+c.version {
			return nil, fmt.Errorf("built-in chart folder %s holds %s %s; name the folder <name>-<version>", d.Name(), c.name, c.version)
		}
		all = append(all, c)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].dir < all[j].dir })
	return all, nil
}

// archive packs one embedded chart folder.
func archive(c chart) ([]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(charts, c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := charts.ReadFile(p)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(p, c.dir+"/")] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("built-in chart %s %s: %w", c.name, c.version, err)
	}
	return catalog.ChartArchive(c.name, files)
}
