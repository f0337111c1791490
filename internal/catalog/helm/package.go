package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"go.yaml.in/yaml/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/archive"
	"github.com/annex-platform/annex/internal/catalog"
)

// PackageMetadata is the part of a package's operator.yaml that places it
// in a catalog. As JSON it is the config blob of a package stored in an OCI
// registry (oci.MediaTypePackageConfig). Strings stay as written: appVersion
// 5.10 is "5.10".
type PackageMetadata struct {
	Name              string              `json:"name" yaml:"name"`
	OperatorVersion   string              `json:"operatorVersion" yaml:"operatorVersion"`
	AppVersion        string              `json:"appVersion,omitempty" yaml:"appVersion"`
	Description       string              `json:"description,omitempty" yaml:"description"`
	KubernetesVersion string              `json:"kubernetesVersion,omitempty" yaml:"kubernetesVersion"`
	URL               string              `json:"url,omitempty" yaml:"url"`
	Maintainers       []PackageMaintainer `json:"maintainers,omitempty" yaml:"maintainers"`
	Extends           *PackageExtends     `json:"extends,omitempty" yaml:"extends"`
	// Dependencies are the packages the package's KudoOperator tasks
	// install: Annex resolves and installs them as dependencies (each an
	// installation of its own), and the task waits until it is Ready.
	Dependencies []PackageDependency `json:"dependencies,omitempty" yaml:"-"`
}

// PackageDependency is another package a KudoOperator task names.
type PackageDependency struct {
	Name    string `json:"name" yaml:"name"`
	Version string `json:"version,omitempty" yaml:"version,omitempty"`
}

// packageTask is what a task of operator.yaml says about a dependency.
type packageTask struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Package         string `yaml:"package"`
		OperatorVersion string `yaml:"operatorVersion"`
		AppVersion      string `yaml:"appVersion"`
	} `yaml:"spec"`
}

// dependencies lists the packages the KudoOperator tasks name, once each,
// at the exact operatorVersion a task asks for (any version when it gives
// none).
func dependenciesOf(tasks []packageTask) []PackageDependency {
	var out []PackageDependency
	seen := map[string]bool{}
	for _, t := range tasks {
		if !strings.EqualFold(t.Kind, "KudoOperator") || t.Spec.Package == "" || seen[t.Spec.Package] {
			continue
		}
		seen[t.Spec.Package] = true
		d := PackageDependency{Name: t.Spec.Package}
		if v := t.Spec.OperatorVersion; v != "" {
			d.Version = "=" + v
		}
		out = append(out, d)
	}
	return out
}

// PackageMaintainer is one maintainer of a package.
type PackageMaintainer struct {
	Name  string `json:"name,omitempty" yaml:"name"`
	Email string `json:"email,omitempty" yaml:"email"`
}

// PackageExtends names the base package of a package (KUDO KEP-0012):
// Operator (or Name) is its name, Version a range matched against the
// base's operatorVersion or appVersion. Kudo is the KEP's nested spelling,
// extends: {kudo: {operator, version}}.
type PackageExtends struct {
	Operator string          `json:"operator,omitempty" yaml:"operator,omitempty"`
	Name     string          `json:"name,omitempty" yaml:"name,omitempty"`
	Version  string          `json:"version,omitempty" yaml:"version,omitempty"`
	Kudo     *PackageExtends `json:"kudo,omitempty" yaml:"kudo,omitempty"`
}

// base returns the base's name and version range, whichever way they are
// spelled; an error names two spellings that disagree.
func (x *PackageExtends) base() (name, version string, err error) {
	names := []string{x.Operator, x.Name}
	versions := []string{x.Version}
	for k := x.Kudo; k != nil; k = k.Kudo {
		names = append(names, k.Operator, k.Name)
		versions = append(versions, k.Version)
	}
	if name, err = oneOf("extends names the base", names); err != nil {
		return "", "", err
	}
	if version, err = oneOf("extends gives the version", versions); err != nil {
		return "", "", err
	}
	return name, version, nil
}

// oneOf returns the one non-empty value of vs; two different ones are an
// error.
func oneOf(what string, vs []string) (string, error) {
	var out string
	for _, v := range vs {
		switch {
		case v == "" || v == out:
		case out == "":
			out = v
		default:
			return "", fmt.Errorf("%s both as %q and %q; keep one", what, out, v)
		}
	}
	return out, nil
}

// ParsePackageMetadata reads the metadata of operator.yaml. Unknown keys
// (tasks, plans, ...) are ignored; an error means the file is not a YAML
// mapping or has no name, and says which.
func ParsePackageMetadata(operatorYAML []byte) (*PackageMetadata, error) {
	var m PackageMetadata
	if err := yaml.Unmarshal(operatorYAML, &m); err != nil {
		return nil, fmt.Errorf("%s: %s", catalog.PackageOperatorFile, catalog.YAMLReason(err))
	}
	if m.Name == "" {
		return nil, fmt.Errorf("%s has no name; set name to the package's name", catalog.PackageOperatorFile)
	}
	var tasks struct {
		Tasks []packageTask `yaml:"tasks"`
	}
	if yaml.Unmarshal(operatorYAML, &tasks) == nil {
		m.Dependencies = dependenciesOf(tasks.Tasks)
	}
	return &m, nil
}

// PackageMetadataOf reads the operator.yaml of a package archive, where the
// package reader finds it: at the root (as KUDO packs a package), else in
// the archive's one folder. The archive should have passed
// catalog.CheckArchive; an error says what is missing or broken.
func PackageMetadataOf(archive []byte) (*PackageMetadata, error) {
	files, err := scanArchive(archive)
	if err != nil {
		return nil, err
	}
	raw := files.packageOperatorYAML()
	if raw == nil {
		return nil, fmt.Errorf("package archive has no %s at its root; pack the package folder with `annexctl package`", catalog.PackageOperatorFile)
	}
	return ParsePackageMetadata(raw)
}

// IndexEntry is the repository index entry of the package, without urls
// and digest (see "Packages in a repository index" in the package
// documentation).
func (m *PackageMetadata) IndexEntry() map[string]any {
	entry := map[string]any{"name": m.Name, "operatorVersion": m.OperatorVersion}
	for k, v := range map[string]string{
		"appVersion":        m.AppVersion,
		"description":       m.Description,
		"kubernetesVersion": m.KubernetesVersion,
		"home":              m.URL,
	} {
		if v != "" {
			entry[k] = v
		}
	}
	if len(m.Maintainers) > 0 {
		var list []map[string]string
		for _, mt := range m.Maintainers {
			list = append(list, map[string]string{"name": mt.Name, "email": mt.Email})
		}
		entry["maintainers"] = list
	}
	if m.Extends != nil {
		entry["extends"] = m.Extends
	}
	if len(m.Dependencies) > 0 {
		deps, _ := yaml.Marshal(m.Dependencies)
		entry["annotations"] = map[string]string{v1alpha1.AnnotationDependencies: string(deps)}
	}
	return entry
}

// CheckPackageEntry reports why a catalog would skip an index entry of the
// package, so that tools refuse to publish what Annex cannot read.
func CheckPackageEntry(m *PackageMetadata) error {
	entry := m.IndexEntry()
	entry["urls"] = []string{"package.tgz"}
	index, err := IndexFromEntries(map[string][]map[string]any{m.Name: {entry}}, "file:///", "")
	if err != nil {
		return err
	}
	if len(index.Skipped) > 0 {
		return fmt.Errorf("%s: %s", catalog.PackageOperatorFile, strings.Join(index.Skipped, "; "))
	}
	return nil
}

// AddPackageToIndex returns indexYAML (a repository index.yaml; empty for
// a new one) with an entry for the package archive: its operator.yaml
// metadata, urls [archiveURL] (relative to the index, as a rule) and the
// archive's digest. An entry of the same name and version is replaced;
// other entries and top-level keys are kept, and each name's entries are
// sorted highest version first. The result is what ParseIndex reads;
// an error means the package would be skipped (the reason says why) or
// indexYAML is not an index.
func AddPackageToIndex(indexYAML, archive []byte, archiveURL string) ([]byte, error) {
	m, err := PackageMetadataOf(archive)
	if err != nil {
		return nil, err
	}
	if err := CheckPackageEntry(m); err != nil {
		return nil, err
	}
	entry := m.IndexEntry()
	entry["urls"] = []string{archiveURL}
	entry["digest"] = strings.TrimPrefix(catalog.Digest(archive), "sha256:")
	var entryNode yaml.Node
	if err := entryNode.Encode(entry); err != nil {
		return nil, fmt.Errorf("index entry of %s: %w", m.Name, err)
	}

	// The index is edited as a YAML tree, so that every other entry keeps
	// its text exactly (version 1.10 stays 1.10).
	var doc yaml.Node
	if len(bytes.TrimSpace(indexYAML)) > 0 {
		if err := yaml.Unmarshal(indexYAML, &doc); err != nil {
			return nil, fmt.Errorf("index.yaml: %s", catalog.YAMLReason(err))
		}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		// Empty, comments only, or null: a new index.
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode}}}
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, errors.New("index.yaml is not a mapping; a repository index starts with apiVersion: v1 and entries:")
	}
	switch v := mappingValue(top, "apiVersion"); {
	case v == nil:
		top.Content = append([]*yaml.Node{scalar("apiVersion"), scalar("v1")}, top.Content...)
	case isNull(v) || v.Kind == yaml.ScalarNode && v.Value == "":
		*v = *scalar("v1")
	case v.Kind != yaml.ScalarNode:
		return nil, fmt.Errorf("index.yaml: apiVersion (line %d) must be v1", v.Line)
	}
	entries := mappingValue(top, "entries")
	if entries == nil || isNull(entries) {
		if entries == nil {
			top.Content = append(top.Content, scalar("entries"), &yaml.Node{})
			entries = top.Content[len(top.Content)-1]
		}
		*entries = yaml.Node{Kind: yaml.MappingNode}
	}
	if entries.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("index.yaml: entries (line %d) must map each name to a list of entries", entries.Line)
	}
	list := mappingValue(entries, m.Name)
	if list == nil || isNull(list) {
		if list == nil {
			entries.Content = append(entries.Content, scalar(m.Name), &yaml.Node{})
			list = entries.Content[len(entries.Content)-1]
		}
		*list = yaml.Node{Kind: yaml.SequenceNode}
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("index.yaml: entries.%s (line %d) must be a list of entries", m.Name, list.Line)
	}
	list.Content = slices.DeleteFunc(list.Content, func(e *yaml.Node) bool {
		return entryVersion(e) == m.OperatorVersion
	})
	list.Content = append(list.Content, &entryNode)
	slices.SortStableFunc(list.Content, func(a, b *yaml.Node) int {
		va, errA := semver.NewVersion(entryVersion(a))
		vb, errB := semver.NewVersion(entryVersion(b))
		switch {
		case errA != nil && errB != nil:
			return 0
		case errA != nil:
			return 1
		case errB != nil:
			return -1
		}
		return vb.Compare(va)
	})
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("index.yaml: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("index.yaml: %w", err)
	}
	// The promise: a catalog reads the package from the result.
	index, err := ParseIndex(out.Bytes(), "file:///", "")
	if err != nil {
		return nil, fmt.Errorf("index.yaml: %w; fix the file or remove it", err)
	}
	prefix := fmt.Sprintf("entry %q %s:", m.Name, m.OperatorVersion)
	for _, s := range index.Skipped {
		if strings.HasPrefix(s, prefix) {
			return nil, fmt.Errorf("index.yaml: %s", s)
		}
	}
	return out.Bytes(), nil
}

// entryVersion is the version of an index entry: operatorVersion for a
// package, version for a chart; "" when it has neither.
func entryVersion(e *yaml.Node) string {
	for _, k := range []string{"operatorVersion", "version"} {
		if v := mappingValue(resolveAlias(e), k); v != nil && v.Kind == yaml.ScalarNode {
			return v.Value
		}
	}
	return ""
}

// mappingValue returns the value of key in a mapping node, nil when absent.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return resolveAlias(m.Content[i+1])
		}
	}
	return nil
}

func scalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// ArchiveEntry returns the index entry fields of a checked archive: the
// IndexEntry of a package's operator.yaml (at the root, or in the folder
// when Chart.yaml is not there too), else the Chart.yaml of a chart. An
// error says why the archive is neither.
func ArchiveEntry(data []byte) (map[string]any, error) {
	files, err := scanArchive(data)
	if err != nil {
		return nil, err
	}
	operator := files.rootOperator
	if operator == nil && files.chart == nil {
		operator = files.operator
	}
	if operator != nil {
		m, err := ParsePackageMetadata(operator)
		if err != nil {
			return nil, err
		}
		return m.IndexEntry(), nil
	}
	if files.chart == nil {
		return nil, errors.New("no Chart.yaml in the chart folder and no operator.yaml; not a chart or a package")
	}
	var md map[string]any
	if err := yaml.Unmarshal(files.chart, &md); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %v", err)
	}
	if md == nil {
		return nil, errors.New("Chart.yaml is empty")
	}
	return md, nil
}

// archiveFiles are the files of a checked archive that say what it is.
type archiveFiles struct {
	// rootOperator is operator.yaml at the root: a package as KUDO packs it.
	rootOperator []byte
	// operator and chart are operator.yaml and Chart.yaml in the one
	// top-level folder: a package or a chart packed in a folder.
	operator, chart []byte
}

// scanArchive reads the files of a checked archive that say what it is.
func scanArchive(data []byte) (*archiveFiles, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("archive is not gzip-compressed: %w", err)
	}
	var out archiveFiles
	err = archive.Walk(zr, archive.Limits{}, func(e *archive.Entry) error {
		if e.Header.Typeflag != tar.TypeReg {
			return nil
		}
		var into *[]byte
		name := archive.TrimDotSlash(e.Header.Name)
		_, rest, nested := strings.Cut(name, "/")
		switch {
		case name == catalog.PackageOperatorFile:
			into = &out.rootOperator
		case nested && rest == catalog.PackageOperatorFile && out.operator == nil:
			into = &out.operator
		case nested && rest == "Chart.yaml" && out.chart == nil:
			into = &out.chart
		default:
			return nil
		}
		var err error
		if *into, err = io.ReadAll(io.LimitReader(e, catalog.DefaultMaxFileBytes)); err != nil {
			return &archive.Error{Problem: archive.NotTar, Entry: e.Header.Name, Err: err}
		}
		return nil
	})
	if err != nil {
		return nil, archive.NotValidTar("archive", err)
	}
	return &out, nil
}

// packageOperatorYAML returns the operator.yaml of a package archive, the
// way the package reader finds it: at the root, else in the one top-level
// folder; nil when there is none.
func (f *archiveFiles) packageOperatorYAML() []byte {
	if f.rootOperator != nil {
		return f.rootOperator
	}
	return f.operator
}

// PackageFileName is the name of a package's archive: <name>-<version>.tgz.
func PackageFileName(name, operatorVersion string) string {
	return name + "-" + operatorVersion + ".tgz"
}
