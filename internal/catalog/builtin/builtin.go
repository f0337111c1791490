// Package builtin is the catalog compiled into Annex: plain chart folders
// under charts/<name>-<version>/ and package folders (operator.yaml,
// params.yaml, templates/) under packages/<folder>/, embedded at build
// time. Its versions move only when Annex does.
//
// Index presents them exactly as a repository would (it builds an index
// from their Chart.yaml and operator.yaml files and parses it with
// catalog.ParseHelmIndex, so a package version has engine Package), with
// URLs builtin://<name>/<version> that a catalog.Fetcher serves when its
// Builtin field is set to Archive.
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
//go:embed all:charts all:packages
var content embed.FS

// artifact is one embedded chart or package folder.
type artifact struct {
	dir     string         // charts/<name>-<version> or packages/<folder>
	name    string         // Chart.yaml or operator.yaml name
	version string         // Chart.yaml version or operatorVersion
	entry   map[string]any // the index entry fields, without urls and digest
	pkg     bool           // a package rather than a chart
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
	for _, a := range all {
		data, err := archive(a)
		if err != nil {
			return nil, err
		}
		entry := make(map[string]any, len(a.entry)+2)
		for k, v := range a.entry {
			entry[k] = v
		}
		entry["urls"] = []string{"builtin://" + a.name + "/" + a.version}
		entry["digest"] = strings.TrimPrefix(catalog.Digest(data), "sha256:")
		entries[a.name] = append(entries[a.name], entry)
	}
	// Marshalling sorts map keys and list() sorts folders, so these bytes,
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
		return nil, fmt.Errorf("built-in catalog has invalid charts or packages: %s", strings.Join(index.Skipped, "; "))
	}
	// Unlike a Helm index, the built-in catalog has each chart version's
	// values schema at hand; publishing it lets values be checked before a
	// fetch. (A package's parameters are in its params.yaml.)
	for i := range index.Packages {
		pkg := &index.Packages[i]
		for j := range pkg.Spec.Versions {
			v := &pkg.Spec.Versions[j]
			if v.Engine != "" {
				continue
			}
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
	raw, err := content.ReadFile(path.Join("charts", name+"-"+version, "values.schema.json"))
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

// Archive returns the archive (.tgz) of one built-in version: a chart
// packed by catalog.ChartArchive or a package by catalog.PackageArchive.
// The bytes are the same on every call (sorted entries, zero mtimes), so
// their digest is the one Index reports. An unknown name or version is an
// error naming the versions that exist.
func Archive(name, version string) ([]byte, error) {
	all, err := list()
	if err != nil {
		return nil, err
	}
	var known []string
	for _, a := range all {
		if a.name == name && a.version == version {
			return archive(a)
		}
		if a.name == name {
			known = append(known, a.version)
		}
	}
	if len(known) == 0 {
		return nil, fmt.Errorf("built-in catalog has no extension %q", name)
	}
	sort.Strings(known)
	return nil, fmt.Errorf("built-in extension %q has no version %q; it has %s", name, version, strings.Join(known, ", "))
}

// list reads every embedded chart's Chart.yaml and every package's
// operator.yaml, sorted by folder. A chart folder must be named
// <name>-<version>; a package folder may have any name. Two folders of
// the same name and version are an error.
func list() ([]artifact, error) {
	var all []artifact
	for _, top := range []string{"charts", "packages"} {
		dirs, err := fs.ReadDir(content, top)
		if err != nil {
			return nil, fmt.Errorf("built-in catalog: %w", err)
		}
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			a, err := read(path.Join(top, d.Name()))
			if err != nil {
				return nil, err
			}
			all = append(all, a)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].dir < all[j].dir })
	seen := map[string]string{}
	for _, a := range all {
		key := a.name + " " + a.version
		if other, ok := seen[key]; ok {
			return nil, fmt.Errorf("built-in folders %s and %s both hold %s %s; remove one", other, a.dir, a.name, a.version)
		}
		seen[key] = a.dir
	}
	return all, nil
}

// read reads the metadata of one embedded folder.
func read(dir string) (artifact, error) {
	a := artifact{dir: dir, pkg: strings.HasPrefix(dir, "packages/")}
	if a.pkg {
		raw, err := content.ReadFile(path.Join(dir, catalog.PackageOperatorFile))
		if err != nil {
			return a, fmt.Errorf("built-in package %s: %w", dir, err)
		}
		m, err := catalog.ParsePackageMetadata(raw)
		if err != nil {
			return a, fmt.Errorf("built-in package %s: %w", dir, err)
		}
		a.name, a.version, a.entry = m.Name, m.OperatorVersion, m.IndexEntry()
		return a, nil
	}
	raw, err := content.ReadFile(path.Join(dir, "Chart.yaml"))
	if err != nil {
		return a, fmt.Errorf("built-in chart %s: %w", dir, err)
	}
	if err := yaml.Unmarshal(raw, &a.entry); err != nil {
		return a, fmt.Errorf("built-in chart %s: Chart.yaml: %w", dir, err)
	}
	a.name, _ = a.entry["name"].(string)
	a.version, _ = a.entry["version"].(string)
	if path.Base(dir) != a.name+"-"+a.version {
		return a, fmt.Errorf("built-in chart folder %s holds %s %s; name the folder <name>-<version>", path.Base(dir), a.name, a.version)
	}
	return a, nil
}

// archive packs one embedded folder.
func archive(a artifact) ([]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(content, a.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := content.ReadFile(p)
		if err != nil {
			return err
		}
		files[strings.TrimPrefix(p, a.dir+"/")] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("built-in %s %s: %w", a.name, a.version, err)
	}
	if a.pkg {
		return catalog.PackageArchive(files)
	}
	return catalog.ChartArchive(a.name, files)
}
