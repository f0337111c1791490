package pkg

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// entry is one tar entry of a test archive.
type entry struct {
	name, body string
	typ        byte // tar.TypeReg when zero
	link       string
	size       int64 // header size when the body is not written in full
}

// tgz packs entries into a .tgz.
func tgz(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Linkname: e.link, Mode: 0o644}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// dirEntries reads a package folder of testdata as archive entries below
// prefix.
func dirEntries(t testing.TB, dir, prefix string) []entry {
	t.Helper()
	var out []entry
	err := fs.WalkDir(os.DirFS(dir), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(dir + "/" + name)
		out = append(out, entry{name: prefix + name, body: string(data)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// minimal is the smallest package that loads and lints clean.
func minimal() fstest.MapFS {
	return fstest.MapFS{
		"operator.yaml": {Data: []byte(`name: tiny
operatorVersion: 0.1.0
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cm.yaml]
plans:
  deploy:
    phases:
      - name: main
        steps:
          - name: app
            tasks: [app]
`)},
		"params.yaml":       {Data: []byte("")},
		"templates/cm.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\n")},
	}
}

// with returns a copy of files with the given files replaced, or removed
// when the content is "-".
func with(files fstest.MapFS, changes map[string]string) fstest.MapFS {
	out := fstest.MapFS{}
	for k, v := range files {
		out[k] = v
	}
	for k, v := range changes {
		if v == "-" {
			delete(out, k)
		} else {
			out[k] = &fstest.MapFile{Data: []byte(v)}
		}
	}
	return out
}

func TestLoadDirFull(t *testing.T) {
	p, err := LoadDir(os.DirFS("testdata/packages/full"))
	if err != nil {
		t.Fatal(err)
	}
	op := p.Operator
	if op.Name != "cassandra-lite" || op.OperatorVersion != "0.2.0" || op.APIVersion != APIVersion {
		t.Errorf("operator = %q %q %q", op.Name, op.OperatorVersion, op.APIVersion)
	}
	// Unlike KUDO, which read 5.1.
	if op.AppVersion != "5.10" {
		t.Errorf("appVersion = %q, want 5.10 as written", op.AppVersion)
	}
	if len(op.Tasks) != 7 || op.Tasks[1].Spec.Pipe[1].EnvFile != "/tmp/node.env" || op.Tasks[6].Spec.Done != true {
		t.Errorf("tasks = %+v", op.Tasks)
	}
	if got := op.Plans["deploy"].Phases[1].Steps[1].Tasks; !reflect.DeepEqual(got, []string{"app", "monitoring"}) {
		t.Errorf("deploy step app tasks = %v", got)
	}
	if len(p.Params.Parameters) != 9 || p.Params.Groups[0].Prio != 1 {
		t.Fatalf("params = %+v", p.Params)
	}
	defaults := map[string]any{}
	for _, prm := range p.Params.Parameters {
		defaults[prm.Name] = prm.Default
	}
	want := map[string]any{
		"NODE_COUNT":    "3",    // scalars as written
		"VERSION":       "5.10", // not 5.1
		"MONITORING":    "false",
		"HEAP_FRACTION": "0.5",
		"JVM_OPTS":      []any{"-Xss256k", "-XX:+UseG1GC"},
		"LABELS":        map[string]any{"tier": "database"},
		"STORAGE_CLASS": nil,
		"BACKUP_NAME":   "nightly",
		"DISK_SIZE":     "10Gi",
	}
	if !reflect.DeepEqual(defaults, want) {
		t.Errorf("defaults =\n%#v\nwant\n%#v", defaults, want)
	}
	if prm := p.param("STORAGE_CLASS"); prm.Required == nil || *prm.Required {
		t.Errorf("STORAGE_CLASS required = %v", prm.Required)
	}
	if prm := p.param("NODE_COUNT"); prm.Required != nil {
		t.Errorf("NODE_COUNT required should stay absent (nil), is %v", *prm.Required)
	}
	var keys []string
	for k := range p.Templates {
		keys = append(keys, k)
	}
	if _, ok := p.Templates["config/configmap.yaml"]; !ok || len(p.Templates) != 6 {
		t.Errorf("templates = %v", keys)
	}
}

func TestLoadDirLegacy(t *testing.T) {
	p, err := LoadDir(os.DirFS("testdata/packages/legacy"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Operator.OperatorVersion != "0.1.0" {
		t.Errorf("operatorVersion from `version` = %q", p.Operator.OperatorVersion)
	}
	// KUDO 0.19 read this file as zero parameters; the order is the file's.
	got := p.Params.Parameters
	if len(got) != 2 || got[0].Name != "NODE_COUNT" || got[0].Default != "3" || got[0].DisplayName != "Nodes" ||
		got[1].Name != "MEMORY" || got[1].Trigger != "deploy" {
		t.Errorf("parameters = %+v", got)
	}
	if p.Params.APIVersion != APIVersion {
		t.Errorf("apiVersion = %q", p.Params.APIVersion)
	}
}

func TestLoadDirLenient(t *testing.T) {
	tests := []struct {
		name  string
		files fstest.MapFS
		check func(t *testing.T, p *Package)
	}{
		// Unknown keys (KEP-0012 fields of another tool, typos) load: Lint
		// reports them.
		{"unknown keys", with(minimal(), map[string]string{
			"operator.yaml": string(minimal()["operator.yaml"].Data) + "flavour: vanilla\n",
			"params.yaml":   "parameters:\n  - name: A\n    colour: red\n",
		}), func(t *testing.T, p *Package) {
			if len(p.Params.Parameters) != 1 {
				t.Errorf("params = %+v", p.Params)
			}
		}},
		// An empty params.yaml is a package without parameters.
		{"empty params", minimal(), func(t *testing.T, p *Package) {
			if len(p.Params.Parameters) != 0 || p.Params.APIVersion != APIVersion {
				t.Errorf("params = %+v", p.Params)
			}
		}},
		// Files that are not package files are ignored, as KUDO does;
		// templates/ holds .yaml only.
		{"other files", with(minimal(), map[string]string{
			"README.md":               "# tiny",
			"templates/notes.txt":     "notes",
			"templates/deep/x/y.yaml": "kind: X",
		}), func(t *testing.T, p *Package) {
			if len(p.Templates) != 2 || p.Templates["deep/x/y.yaml"] != "kind: X" {
				t.Errorf("templates = %v", p.Templates)
			}
		}},
		// yes/no were booleans to KUDO's YAML 1.1 reader.
		{"yaml 1.1 booleans", with(minimal(), map[string]string{
			"params.yaml": "parameters:\n  - name: A\n    required: no\n    default: yes\n",
		}), func(t *testing.T, p *Package) {
			prm := p.Params.Parameters[0]
			if prm.Required == nil || *prm.Required || prm.Default != "yes" {
				t.Errorf("param = %+v", prm)
			}
		}},
		// Aliases are followed.
		{"aliases", with(minimal(), map[string]string{
			"params.yaml": "parameters:\n  - name: A\n    default: &list [1, 2]\n  - name: B\n    default: *list\n",
		}), func(t *testing.T, p *Package) {
			if !reflect.DeepEqual(p.Params.Parameters[1].Default, []any{int64(1), int64(2)}) {
				t.Errorf("B default = %#v", p.Params.Parameters[1].Default)
			}
		}},
		// KEP-0012's plan of steps becomes one phase (NormalizeOperator).
		{"plan of steps", with(minimal(), map[string]string{
			"operator.yaml": "name: tiny\noperatorVersion: 0.1.0\ntasks:\n  - name: app\n    kind: Apply\n    spec: {resources: [cm.yaml]}\nplans:\n  deploy:\n    steps:\n      - name: app\n        tasks: [app]\n",
		}), func(t *testing.T, p *Package) {
			if ph := p.Operator.Plans["deploy"].Phases; len(ph) != 1 || ph[0].Steps[0].Tasks[0] != "app" {
				t.Errorf("deploy = %+v", p.Operator.Plans["deploy"])
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadDir(tt.files)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, p)
		})
	}
}

func TestLoadDirErrors(t *testing.T) {
	op := string(minimal()["operator.yaml"].Data)
	tests := []struct {
		name    string
		changes map[string]string
		// want is the whole error text.
		want string
	}{
		// Both files are required.
		{"no operator.yaml", map[string]string{"operator.yaml": "-"},
			"operator.yaml: missing; a package has operator.yaml at its root"},
		{"no params.yaml", map[string]string{"params.yaml": "-"},
			"params.yaml: missing; a package has params.yaml at its root (it may be empty)"},
		// An empty operator.yaml says what it needs.
		{"empty operator.yaml", map[string]string{"operator.yaml": "# nothing\n"},
			"operator.yaml: is empty; it needs at least name, operatorVersion, tasks and plans"},
		// Only kudo.dev/v1beta1, with the line.
		{"operator apiVersion", map[string]string{"operator.yaml": "name: x\napiVersion: kudo.dev/v1alpha1\n"},
			`operator.yaml:2: apiVersion "kudo.dev/v1alpha1" is not supported; use kudo.dev/v1beta1 or leave it out`},
		{"params apiVersion", map[string]string{"params.yaml": "apiVersion: v2\nparameters: []\n"},
			`params.yaml:1: apiVersion "v2" is not supported; use kudo.dev/v1beta1 or leave it out`},
		// Syntax errors keep yaml's line.
		{"syntax", map[string]string{"params.yaml": "parameters:\n  - name: A\n    default: a: b\n"},
			"params.yaml:3: is not valid YAML: mapping values are not allowed in this context; fix the syntax"},
		// A field of the wrong shape names the path.
		{"resources not a list", map[string]string{"operator.yaml": strings.Replace(op, "resources: [cm.yaml]", "resources: cm.yaml", 1)},
			`operator.yaml:7: tasks[0].spec.resources: must be a list (got "cm.yaml")`},
		{"bool", map[string]string{"params.yaml": "parameters:\n  - name: A\n    required: maybe\n"},
			`params.yaml:3: parameters[0].required: must be true or false (got "maybe")`},
		// KUDO < 0.8 tasks were a map.
		{"tasks map", map[string]string{"operator.yaml": "name: x\ntasks:\n  app:\n    resources: [cm.yaml]\n"},
			"operator.yaml:3: tasks is a map, the form of KUDO before 0.8; write a list of tasks: `- name: app`, `kind: Apply`, `spec: {resources: [app.yaml]}`"},
		// A key twice would hide one of the values.
		{"duplicate key", map[string]string{"operator.yaml": "name: x\nname: y\n"},
			`operator.yaml:2: the file: key "name" appears twice; keep one`},
		{"merge key", map[string]string{"operator.yaml": "name: x\n<<: {url: y}\n"},
			`operator.yaml:2: the file: merge keys (<<) are not supported; write the keys out`},
		// Nested aliases cannot blow up the decoder.
		{"alias bomb", map[string]string{"params.yaml": aliasBomb()},
			"params.yaml:1: expands to more than 100000 YAML nodes (nested aliases?); write the values out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadDir(with(minimal(), tt.changes))
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v (%T), want a *LoadError", err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("err =\n%s\nwant\n%s", err, tt.want)
			}
		})
	}
}

// aliasBomb nests aliases ten deep, ten wide: 10^10 nodes expanded.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("x0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("x")
		b.WriteString(string(rune('0' + i)))
		b.WriteString(": &a")
		b.WriteString(string(rune('0' + i)))
		b.WriteString(" [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a")
			b.WriteString(string(rune('0' + i - 1)))
		}
		b.WriteString("]\n")
	}
	b.WriteString("parameters:\n  - name: A\n    default: *a8\n")
	return b.String()
}

func TestLoadArchive(t *testing.T) {
	full := func(prefix string) []entry { return dirEntries(t, "testdata/packages/full", prefix) }
	tests := []struct {
		name    string
		archive []byte
		// want is a substring of the error; "" means it loads.
		want string
	}{
		// `kubectl kudo package create` writes the files at the root.
		{"root", tgz(t, full("")...), ""},
		// `tar czf x.tgz .` writes ./ names.
		{"dot slash", tgz(t, append([]entry{{name: "./", typ: tar.TypeDir}}, full("./")...)...), ""},
		// `tar czf x.tgz pkg/` writes one top-level folder.
		{"top folder", tgz(t, append([]entry{{name: "cassandra/", typ: tar.TypeDir}}, full("cassandra/")...)...), ""},
		// Two folders: which is the package?
		{"two folders", tgz(t, append(full("a/"), entry{name: "b/x.yaml", body: "x"})...),
			"has no operator.yaml at its root nor in one top-level folder"},
		{"empty", tgz(t), "holds no files"},
		{"traversal", tgz(t, append(full(""), entry{name: "templates/../../etc/passwd", body: "x"})...), `contains ".."`},
		{"absolute", tgz(t, append(full(""), entry{name: "/etc/passwd", body: "x"})...), "is an absolute path"},
		{"symlink", tgz(t, append(full(""), entry{name: "templates/x.yaml", typ: tar.TypeSymlink, link: "/etc/passwd"})...),
			`is a link (to "/etc/passwd")`},
		{"hard link", tgz(t, append(full(""), entry{name: "templates/x.yaml", typ: tar.TypeLink, link: "operator.yaml"})...), "is a link"},
		{"fifo", tgz(t, append(full(""), entry{name: "templates/x.yaml", typ: tar.TypeFifo})...), "is a special file"},
		{"duplicate", tgz(t, append(full(""), entry{name: "operator.yaml", body: "name: other"})...), "appears twice"},
		{"file too large", tgz(t, append(full(""), entry{name: "templates/big.yaml", body: strings.Repeat("#", MaxFileBytes+1)})...),
			"more than the limit of 5242880 bytes per file"},
		{"bomb", tgz(t, bombEntries()...), "expands to more than 52428800 bytes"},
		{"not gzip", []byte("operator.yaml"), "is not gzip-compressed"},
		{"not tar", gzipped("not a tar archive, just text that is long enough to be read as a header?"), "not a valid gzipped tar"},
		// The package inside must load.
		{"no params", tgz(t, entry{name: "operator.yaml", body: "name: x"}), "params.yaml: missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := LoadArchive(tt.archive)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p.Operator.Name != "cassandra-lite" || len(p.Templates) != 6 {
					t.Errorf("package = %s with %d templates", p.Operator.Name, len(p.Templates))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Errorf("err is %T, want *LoadError", err)
			}
		})
	}
}

// bombEntries are eleven files of 5 MiB of zeros: 55 MiB expanded.
func bombEntries() []entry {
	out := []entry{{name: "operator.yaml", body: "name: x"}, {name: "params.yaml"}}
	zeros := strings.Repeat("\x00", MaxFileBytes)
	for i := range 11 {
		out = append(out, entry{name: "templates/z" + string(rune('a'+i)) + ".yaml", body: zeros})
	}
	return out
}

func gzipped(s string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.Write([]byte(s))
	gz.Close()
	return buf.Bytes()
}
