package pkg

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing/fstest"

	"go.yaml.in/yaml/v3"

	"github.com/annex-platform/annex/internal/archive"
)

// The files of a package, relative to its root.
const (
	OperatorFile = "operator.yaml"
	ParamsFile   = "params.yaml"
	TemplatesDir = "templates"
)

// LoadError reports a package that cannot be read: a missing or malformed
// operator.yaml or params.yaml, an unsupported apiVersion, or an archive
// refused by its limits. The package must change; reading the same bytes
// fails again.
type LoadError struct {
	// File is the package file at fault ("operator.yaml"), or the archive
	// entry; empty when the whole archive is.
	File string
	// Line is the 1-based line in File, 0 when unknown.
	Line int
	// Message says what is wrong and how to fix it.
	Message string
}

func (e *LoadError) Error() string {
	switch {
	case e.File == "":
		return "package: " + e.Message
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return e.File + ": " + e.Message
}

// Permanent marks the error as final, so callers stop retrying (they
// classify errors without importing this package).
func (e *LoadError) Permanent() bool { return true }

// LoadDir reads the package whose root is fsys: operator.yaml and
// params.yaml at the root (both required; params.yaml may be empty) and
// every templates/**.yaml at any depth, keyed by its path below
// templates/. Other files are ignored, as KUDO ignores them. An absent
// apiVersion means APIVersion; any other is an error. Unknown keys are not
// errors (Lint reports them); a params.yaml in the map form of KUDO ≤ 0.7
// and the `version` key of operator.yaml before 0.10 are read as their
// successors, and NormalizeOperator brings operator.yaml to the one
// spelling the engine reads. Errors are *LoadError naming the file, the
// line and the fix; semantic checks (missing plans, tasks, templates) are
// Lint's.
func LoadDir(fsys fs.FS) (*Package, error) {
	files, err := readPackageFiles(fsys)
	if err != nil {
		return nil, err
	}
	return files.load()
}

// packageFiles are the raw files of a package.
type packageFiles struct {
	operator, params []byte
	hasOperator      bool
	hasParams        bool
	templates        map[string]string
	// ignored are files below templates/ that are not templates (no .yaml).
	ignored []string
}

func readPackageFiles(fsys fs.FS) (*packageFiles, error) {
	files := &packageFiles{templates: map[string]string{}}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch {
		case name == OperatorFile, name == ParamsFile:
		case strings.HasPrefix(name, TemplatesDir+"/"):
			if !strings.HasSuffix(name, ".yaml") {
				files.ignored = append(files.ignored, name)
				return nil
			}
		default:
			return nil
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		switch name {
		case OperatorFile:
			files.operator, files.hasOperator = data, true
		case ParamsFile:
			files.params, files.hasParams = data, true
		default:
			files.templates[strings.TrimPrefix(name, TemplatesDir+"/")] = string(data)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read package: %w", err)
	}
	return files, nil
}

func (f *packageFiles) load() (*Package, error) {
	if !f.hasOperator {
		return nil, &LoadError{File: OperatorFile, Message: "missing; a package has operator.yaml at its root"}
	}
	if !f.hasParams {
		return nil, &LoadError{File: ParamsFile, Message: "missing; a package has params.yaml at its root (it may be empty)"}
	}
	op, _, err := parseOperator(f.operator)
	if err != nil {
		return nil, err
	}
	params, _, err := parseParams(f.params)
	if err != nil {
		return nil, err
	}
	// One spelling for the rest of the engine (KEP-0012's aliases, plans
	// of steps, delete: true steps); its warnings are Lint's to report.
	if _, err := NormalizeOperator(&op); err != nil {
		return nil, &LoadError{File: OperatorFile, Message: err.Error()}
	}
	return &Package{Operator: op, Params: params, Templates: f.templates}, nil
}

// fileInfo is what Lint needs beyond the decoded file.
type fileInfo struct {
	lines   map[string]int
	unknown []Problem
	// legacy describes an old form read as its successor, for a warning.
	legacy []Problem
}

// line returns the line of path or, when the path has none (a field
// NormalizeOperator made), of its nearest ancestor that has one.
func (fi *fileInfo) line(path string) int {
	for path != "" {
		if line, ok := fi.lines[path]; ok {
			return line
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// parseOperator decodes operator.yaml.
func parseOperator(data []byte) (Operator, *fileInfo, error) {
	var op Operator
	root, err := parseRoot(OperatorFile, data)
	if err != nil {
		return op, nil, err
	}
	info := &fileInfo{lines: map[string]int{}}
	if root == nil {
		return op, info, &LoadError{File: OperatorFile, Message: "is empty; it needs at least name, operatorVersion, tasks and plans"}
	}
	if root.Kind == yaml.MappingNode {
		if key := mappingKey(root, "version"); key != nil && mappingKey(root, "operatorVersion") == nil {
			// KUDO 0.10 renamed version to operatorVersion.
			key.Value = "operatorVersion"
			info.legacy = append(info.legacy, Problem{File: OperatorFile, Line: key.Line, Severity: SeverityWarning,
				Message: "key \"version\" is the name KUDO used before 0.10; rename it to operatorVersion"})
		}
		if tasks := mappingValue(root, "tasks"); tasks != nil && tasks.Kind == yaml.MappingNode {
			return op, info, &LoadError{File: OperatorFile, Line: tasks.Line,
				Message: "tasks is a map, the form of KUDO before 0.8; write a list of tasks: `- name: app`, `kind: Apply`, `spec: {resources: [app.yaml]}`"}
		}
	}
	d := newNodeDecoder(OperatorFile)
	if err := d.decode(root, "", reflect.ValueOf(&op).Elem()); err != nil {
		return op, info, err
	}
	info.lines, info.unknown = d.lines, d.unknown
	if op.APIVersion == "" {
		op.APIVersion = APIVersion
	}
	if op.APIVersion != APIVersion {
		return op, info, &LoadError{File: OperatorFile, Line: d.lines["apiVersion"],
			Message: fmt.Sprintf("apiVersion %q is not supported; use %s or leave it out", op.APIVersion, APIVersion)}
	}
	return op, info, nil
}

// parseParams decodes params.yaml, in the list form or, for KUDO ≤ 0.7,
// the map form (NAME: {default, description, displayName, trigger}),
// which KUDO's own reader turns into zero parameters without a word.
func parseParams(data []byte) (Params, *fileInfo, error) {
	var params Params
	root, err := parseRoot(ParamsFile, data)
	if err != nil {
		return params, nil, err
	}
	info := &fileInfo{lines: map[string]int{}}
	if root != nil && isLegacyParams(root) {
		info.legacy = append(info.legacy, Problem{File: ParamsFile, Line: root.Line, Severity: SeverityWarning,
			Message: "parameters are a map, the form of KUDO before 0.8; write `apiVersion: kudo.dev/v1beta1` and a `parameters:` list of `- name: ...` entries"})
		root = legacyParamsToList(root)
	}
	if root != nil {
		d := newNodeDecoder(ParamsFile)
		if err := d.decode(root, "", reflect.ValueOf(&params).Elem()); err != nil {
			return params, info, err
		}
		info.lines, info.unknown = d.lines, d.unknown
	}
	if params.APIVersion == "" {
		params.APIVersion = APIVersion
	}
	if params.APIVersion != APIVersion {
		return params, info, &LoadError{File: ParamsFile, Line: info.lines["apiVersion"],
			Message: fmt.Sprintf("apiVersion %q is not supported; use %s or leave it out", params.APIVersion, APIVersion)}
	}
	return params, info, nil
}

// parseRoot parses one YAML document and returns its root node, nil for
// an empty or comment-only file.
func parseRoot(file string, data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(file, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, nil
	}
	return doc.Content[0], nil
}

// yamlError turns yaml.v3's "yaml: line 3: ..." into a *LoadError.
func yamlError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, after, ok := strings.Cut(rest, ": "); ok {
			if _, scanErr := fmt.Sscanf(n, "%d", &line); scanErr == nil {
				msg = after
			}
		}
	}
	return &LoadError{File: file, Line: line, Message: "is not valid YAML: " + msg + "; fix the syntax"}
}

func mappingKey(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// isLegacyParams tells the map form of params.yaml: a map without the
// keys of the list form whose every value is a map (or empty).
func isLegacyParams(root *yaml.Node) bool {
	if root.Kind != yaml.MappingNode || len(root.Content) == 0 {
		return false
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "apiVersion", "parameters", "groups":
			return false
		}
		v := root.Content[i+1]
		for v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if v.Kind != yaml.MappingNode && !isNull(v) {
			return false
		}
	}
	return true
}

// legacyParamsToList rewrites NAME: {fields} into parameters: [{name:
// NAME, fields}], keeping lines, so the list decoder reads it.
func legacyParamsToList(root *yaml.Node) *yaml.Node {
	list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: root.Line}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		entry := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: key.Line}
		entry.Content = append(entry.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "name", Line: key.Line},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key.Value, Line: key.Line})
		for val.Kind == yaml.AliasNode && val.Alias != nil {
			val = val.Alias
		}
		if val.Kind == yaml.MappingNode {
			entry.Content = append(entry.Content, val.Content...)
		}
		list.Content = append(list.Content, entry)
	}
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: root.Line, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "parameters", Line: root.Line}, list,
	}}
}

// Limits of LoadArchive, which checks archives with package archive, as
// the catalog does (the catalog checks them too, with the same refusals,
// before they are cached).
const (
	MaxArchiveBytes  = 10 << 20
	MaxExpandedBytes = 50 << 20
	MaxFileBytes     = 5 << 20
	MaxArchiveFiles  = 10_000
)

// LoadArchive reads a package from a .tgz: the files at the root of the
// archive, as `kubectl kudo package create` writes them (a leading "./"
// is fine), or under one top-level folder. It is ArchiveFS then LoadDir.
func LoadArchive(data []byte) (*Package, error) {
	fsys, err := ArchiveFS(data)
	if err != nil {
		return nil, err
	}
	return LoadDir(fsys)
}

// ArchiveFS unpacks a package .tgz into memory and returns the package
// root, for LoadDir or Lint. It refuses, with a *LoadError, archives
// larger than MaxArchiveBytes or expanding to more than MaxExpandedBytes,
// files larger than MaxFileBytes, more than MaxArchiveFiles entries,
// absolute or parent-relative paths, links and special files, duplicate
// entries, and bytes that are not a gzipped tar.
func ArchiveFS(data []byte) (fs.FS, error) {
	if len(data) > MaxArchiveBytes {
		return nil, archiveError("", "%d bytes is more than the limit of %d bytes; a package is far smaller", len(data), MaxArchiveBytes)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, archiveError("", "is not gzip-compressed (%v); build it with `tar czf` or `kubectl kudo package create`", err)
	}
	files := fstest.MapFS{}
	lim := archive.Limits{MaxExpandedBytes: MaxExpandedBytes, MaxFileBytes: MaxFileBytes, MaxFiles: MaxArchiveFiles}
	err = archive.Walk(zr, lim, func(e *archive.Entry) error {
		hdr := e.Header
		name, err := cleanEntryName(hdr.Name)
		if err != nil {
			return archiveError(hdr.Name, "%v", err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			return nil
		}
		switch archive.CheckType(hdr) {
		case archive.SymbolicLink, archive.HardLink:
			return archiveError(hdr.Name, "is a link (to %q); a package holds regular files only", hdr.Linkname)
		case archive.SpecialFile:
			return archiveError(hdr.Name, "is a special file (tar type %q); a package holds regular files only", string(hdr.Typeflag))
		}
		if name == "" {
			return archiveError(hdr.Name, "is not a file path")
		}
		if _, dup := files[name]; dup {
			return archiveError(hdr.Name, "appears twice; which copy counts would be ambiguous")
		}
		content, err := e.ReadAll()
		if err != nil {
			return err
		}
		files[name] = &fstest.MapFile{Data: content, Mode: 0o644}
		return nil
	})
	if err != nil {
		return nil, walkError(err)
	}
	return packageRoot(files)
}

// packageRoot finds operator.yaml at the root or in the one top-level
// folder.
func packageRoot(files fstest.MapFS) (fs.FS, error) {
	if _, ok := files[OperatorFile]; ok {
		return files, nil
	}
	top := ""
	for name := range files {
		first, _, nested := strings.Cut(name, "/")
		if !nested || (top != "" && first != top) {
			return nil, archiveError("", "has no operator.yaml at its root nor in one top-level folder; pack the package folder's contents")
		}
		top = first
	}
	if top == "" {
		return nil, archiveError("", "holds no files; a package holds operator.yaml, params.yaml and templates/")
	}
	sub, err := fs.Sub(files, top)
	if err != nil {
		return nil, err
	}
	return sub, nil
}

// cleanEntryName strips a leading "./" and a folder's trailing "/", and
// refuses names that could land outside the package or confuse a
// terminal; the archive's root ("", ".") is "".
func cleanEntryName(name string) (string, error) {
	name = strings.TrimSuffix(archive.TrimDotSlash(name), "/")
	if name == "" || name == "." {
		return "", nil
	}
	switch archive.CheckName(name) {
	case 0:
		return name, nil
	case archive.AbsolutePath:
		return "", errors.New("is an absolute path; package entries are relative")
	case archive.Backslash:
		return "", errors.New(`contains a backslash; package entries use "/"`)
	case archive.ControlCharacters:
		return "", errors.New("contains control characters")
	case archive.ParentPath:
		return "", errors.New(`contains ".."; package entries stay inside the package`)
	}
	return "", errors.New("is not a clean path")
}

func archiveError(entry, format string, args ...any) error {
	return &LoadError{File: entry, Message: "archive refused: " + fmt.Sprintf(format, args...)}
}

// walkError words the refusals of archive.Walk for a package; the
// package's own errors pass as they are.
func walkError(err error) error {
	var e *archive.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Problem {
	case archive.TooExpanded:
		return archiveError("", "expands to more than %d bytes (a decompression bomb?); a package is far smaller", MaxExpandedBytes)
	case archive.TooManyEntries:
		return archiveError("", "has more than %d entries; a package has far fewer files", MaxArchiveFiles)
	case archive.FileTooLarge:
		if e.Size > 0 {
			return archiveError(e.Entry, "is %d bytes, more than the limit of %d bytes per file", e.Size, MaxFileBytes)
		}
		return archiveError(e.Entry, "is more than the limit of %d bytes per file", MaxFileBytes)
	}
	return archiveError(e.Entry, "is not a valid gzipped tar (%v)", e.Err)
}
