// Package builtin is the catalog compiled into Annex: plain chart folders
// under charts/<name>-<version>/, package folders (operator.yaml,
// params.yaml, templates/) under packages/<folder>/, and operators: a
// File-Based Catalog in operators/configs/ whose registry+v1 bundles are
// the folders operators/bundles/<package>-<version>/ (manifests/,
// metadata/), all embedded at build time, and the native extensions:
// Annex's own charts (the top-level package charts: extension "annex" at
// Chart.yaml's version, Annex's release). Its versions move only when
// Annex does.
//
// Index presents them exactly as a repository would (it builds an index
// from their Chart.yaml and operator.yaml files and parses it with
// helm.ParseIndex, so a package version has engine Package; it parses the
// File-Based Catalog with olm.Parse, so a bundle has engine Bundle), with
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

	"github.com/annex-platform/annex/charts"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/helm"
	"github.com/annex-platform/annex/internal/catalog/olm"
)

// The all: prefix keeps files such as templates/_helpers.tpl, which go:embed
// leaves out by default.
//
//go:embed all:charts all:packages all:operators
var content embed.FS

// The folders of each kind of artifact, and of the operators' catalog.
const (
	chartsDir       = "charts"
	packagesDir     = "packages"
	bundlesDir      = "operators/bundles"
	operatorConfigs = "operators/configs"
	annotationsFile = "metadata/annotations.yaml"
	bundlePackage   = "operators.operatorframework.io.bundle.package.v1"
)

// native are the charts of Annex itself, each a file system with
// Chart.yaml at its root, offered at their Chart.yaml version.
var native = map[string]fs.FS{"charts/annex": charts.Annex()}

// artifact is one embedded chart, package or bundle folder.
type artifact struct {
	fsys    fs.FS          // content, or a native chart's file system
	dir     string         // charts/<name>-<version>, packages/<folder> or operators/bundles/<package>-<version> in fsys; "." for a native chart
	label   string         // the folder as errors name it
	kind    string         // chartsDir, packagesDir or bundlesDir
	name    string         // Chart.yaml or operator.yaml name, or the bundle's package
	version string         // Chart.yaml version, operatorVersion, or the bundle's version
	entry   map[string]any // the Helm index entry fields, without urls and digest (charts and packages)
}

// Index returns the built-in catalog's content: one Package per embedded
// chart, package and operator, versions highest first, every Source.URL
// builtin://<name>/<version> with the digest of the archive Archive
// returns, Source.Catalog set to catalogName, ValuesSchema set from a
// chart's values.schema.json; an operator's versions are its File-Based
// Catalog's bundles (engine Bundle, channels and edges, install modes) as
// olm.Parse reads them. Index.Digest covers the content independent of
// catalogName. An error means a broken embedded chart or catalog, a bug
// caught by this package's tests.
func Index(catalogName string) (*catalog.Index, error) {
	all, err := list()
	if err != nil {
		return nil, err
	}
	entries := map[string][]map[string]any{}
	byVersion := map[string]artifact{} // "<name> <version>" of charts and packages
	var bundles []artifact
	for _, a := range all {
		if a.kind == bundlesDir {
			bundles = append(bundles, a)
			continue
		}
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
		byVersion[a.name+" "+a.version] = a
	}
	// Marshalling sorts map keys and list() sorts folders, so these bytes,
	// and with them Index.Digest, depend only on the embedded files.
	indexYAML, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": entries})
	if err != nil {
		return nil, fmt.Errorf("built-in catalog: %w", err)
	}
	index, err := helm.ParseIndex(indexYAML, "builtin://", catalogName)
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
			schema, err := valuesSchema(byVersion[pkg.Name+" "+v.Version])
			if err != nil {
				return nil, err
			}
			v.ValuesSchema = schema
		}
	}
	operators, err := operatorIndex(catalogName, bundles)
	if err != nil {
		return nil, err
	}
	for _, op := range operators.Packages {
		for _, p := range index.Packages {
			if p.Name == op.Name {
				return nil, fmt.Errorf("built-in catalog offers %q both as a chart or package and as an operator; rename one", op.Name)
			}
		}
	}
	index.Packages = append(index.Packages, operators.Packages...)
	sort.Slice(index.Packages, func(i, j int) bool { return index.Packages[i].Name < index.Packages[j].Name })
	index.Digest = catalog.Digest([]byte(index.Digest + "\n" + operators.Digest))
	return index, nil
}

// operatorIndex parses the File-Based Catalog of operators/configs (its
// YAML files in name order, as one stream) and points each bundle's
// version at its folder among bundles: builtin://<package>/<version> and
// the digest of its archive. Every olm.bundle needs a folder and every
// folder an olm.bundle. The Digest covers the catalog and the bundles.
func operatorIndex(catalogName string, bundles []artifact) (*catalog.Index, error) {
	var stream bytes.Buffer
	err := fs.WalkDir(content, operatorConfigs, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (path.Ext(p) != ".yaml" && path.Ext(p) != ".yml") {
			return err
		}
		data, err := content.ReadFile(p)
		stream.WriteString("---\n")
		stream.Write(data)
		stream.WriteString("\n")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("built-in operator catalog: %w", err)
	}
	index, err := olm.Parse(&stream, catalogName)
	if err != nil {
		return nil, fmt.Errorf("built-in operator catalog: %w", err)
	}
	if len(index.Skipped) > 0 {
		return nil, fmt.Errorf("built-in operator catalog %s has invalid blobs: %s", operatorConfigs, strings.Join(index.Skipped, "; "))
	}
	digests := map[string]string{} // "<package> <version>" → archive digest
	sum := index.Digest
	for _, a := range bundles {
		data, err := archive(a)
		if err != nil {
			return nil, err
		}
		digests[a.name+" "+a.version] = catalog.Digest(data)
		sum += "\n" + a.dir + " " + digests[a.name+" "+a.version]
	}
	for i := range index.Packages {
		pkg := &index.Packages[i]
		for j := range pkg.Spec.Versions {
			v := &pkg.Spec.Versions[j]
			digest, ok := digests[pkg.Name+" "+v.Version]
			if !ok {
				return nil, fmt.Errorf("built-in operator catalog: bundle %s %s has no folder %s/%s-%s", pkg.Name, v.Version, bundlesDir, pkg.Name, v.Version)
			}
			delete(digests, pkg.Name+" "+v.Version)
			v.Source.URL = "builtin://" + pkg.Name + "/" + v.Version
			v.Source.Digest = digest
		}
	}
	for _, a := range bundles {
		if _, left := digests[a.name+" "+a.version]; left {
			return nil, fmt.Errorf("built-in bundle %s (%s %s) is in no olm.bundle of %s; add it there or remove the folder", a.dir, a.name, a.version, operatorConfigs)
		}
	}
	index.Digest = catalog.Digest([]byte(sum))
	return index, nil
}

// valuesSchema returns the values.schema.json of one built-in chart, nil
// when it has none.
func valuesSchema(a artifact) (*apiextensionsv1.JSON, error) {
	raw, err := fs.ReadFile(a.fsys, path.Join(a.dir, "values.schema.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("built-in chart %s %s: %w", a.name, a.version, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, fmt.Errorf("built-in chart %s %s: values.schema.json: %w", a.name, a.version, err)
	}
	return &apiextensionsv1.JSON{Raw: compact.Bytes()}, nil
}

// Archive returns the archive (.tgz) of one built-in version: a chart
// packed by catalog.ChartArchive, a package by catalog.PackageArchive, or
// an operator bundle by catalog.BundleArchive (manifests/ and metadata/
// at its root).
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

// list reads every embedded chart's Chart.yaml (native charts included),
// every package's operator.yaml and every bundle's
// metadata/annotations.yaml, sorted by folder. A chart folder must be
// named <name>-<version>, a bundle folder <package>-<version>; a package
// folder or a native chart may have any name. Two folders of the same name
// and version are an error.
func list() ([]artifact, error) {
	var all []artifact
	for label, fsys := range native {
		a, err := readChart(artifact{fsys: fsys, dir: ".", kind: chartsDir, label: label})
		if err != nil {
			return nil, err
		}
		all = append(all, a)
	}
	for _, top := range []string{chartsDir, packagesDir, bundlesDir} {
		dirs, err := fs.ReadDir(content, top)
		if err != nil {
			return nil, fmt.Errorf("built-in catalog: %w", err)
		}
		for _, d := range dirs {
			if !d.IsDir() {
				continue
			}
			a, err := read(top, d.Name())
			if err != nil {
				return nil, err
			}
			all = append(all, a)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].label < all[j].label })
	seen := map[string]string{}
	for _, a := range all {
		key := a.name + " " + a.version
		if other, ok := seen[key]; ok {
			return nil, fmt.Errorf("built-in folders %s and %s both hold %s %s; remove one", other, a.label, a.name, a.version)
		}
		seen[key] = a.label
	}
	return all, nil
}

// read reads the metadata of the embedded folder top/name.
func read(top, name string) (artifact, error) {
	dir := path.Join(top, name)
	a := artifact{fsys: content, dir: dir, kind: top, label: dir}
	switch top {
	case bundlesDir:
		return readBundle(a, name)
	case packagesDir:
		raw, err := content.ReadFile(path.Join(dir, catalog.PackageOperatorFile))
		if err != nil {
			return a, fmt.Errorf("built-in package %s: %w", dir, err)
		}
		m, err := helm.ParsePackageMetadata(raw)
		if err != nil {
			return a, fmt.Errorf("built-in package %s: %w", dir, err)
		}
		a.name, a.version, a.entry = m.Name, m.OperatorVersion, m.IndexEntry()
		return a, nil
	}
	a, err := readChart(a)
	if err == nil && path.Base(dir) != a.name+"-"+a.version {
		return a, fmt.Errorf("built-in chart folder %s holds %s %s; name the folder <name>-<version>", path.Base(dir), a.name, a.version)
	}
	return a, err
}

// readChart reads the name, version and index entry of the chart folder
// a.dir from its Chart.yaml.
func readChart(a artifact) (artifact, error) {
	raw, err := fs.ReadFile(a.fsys, path.Join(a.dir, "Chart.yaml"))
	if err != nil {
		return a, fmt.Errorf("built-in chart %s: %w", a.label, err)
	}
	if err := yaml.Unmarshal(raw, &a.entry); err != nil {
		return a, fmt.Errorf("built-in chart %s: Chart.yaml: %w", a.label, err)
	}
	a.name, _ = a.entry["name"].(string)
	a.version, _ = a.entry["version"].(string)
	return a, nil
}

// readBundle reads the package of the bundle folder a.dir (named folder)
// from its annotations; the rest of the folder's name is the version.
func readBundle(a artifact, folder string) (artifact, error) {
	raw, err := fs.ReadFile(a.fsys, path.Join(a.dir, annotationsFile))
	if err != nil {
		return a, fmt.Errorf("built-in bundle %s: %w", a.dir, err)
	}
	var f struct {
		Annotations map[string]string `yaml:"annotations"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		return a, fmt.Errorf("built-in bundle %s: %s: %w", a.dir, annotationsFile, err)
	}
	a.name = f.Annotations[bundlePackage]
	version, ok := strings.CutPrefix(folder, a.name+"-")
	if a.name == "" || !ok || version == "" {
		return a, fmt.Errorf("built-in bundle folder %s holds package %q (%s); name the folder <package>-<version>", a.dir, a.name, annotationsFile)
	}
	a.version = version
	return a, nil
}

// archive packs one embedded folder.
func archive(a artifact) ([]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(a.fsys, a.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(a.fsys, p)
		if err != nil {
			return err
		}
		rel, _ := strings.CutPrefix(p, a.dir+"/") // a.dir "." walks names without a prefix
		files[rel] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("built-in %s %s: %w", a.name, a.version, err)
	}
	switch a.kind {
	case packagesDir:
		return catalog.PackageArchive(files)
	case bundlesDir:
		return catalog.BundleArchive(files)
	}
	return catalog.ChartArchive(a.name, files)
}
