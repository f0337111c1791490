package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// The README's promises, checked against the repository: its tour runs as
// written on `annex dev`, its Layout section matches the tree, and the
// make targets and `go run` packages it names exist.

// TestReadmeTour runs the README's 60-second tour (the ```sh block between
// <!-- tour:begin --> and <!-- tour:end -->) command by command with bash,
// exactly as written, against `annex dev` (hub only) with a freshly built
// annexctl. The commands run in a folder laid out as the repository root
// is after `make run`: .annex/dev/kubeconfig is the dev cluster's admin
// kubeconfig and bin/annexctl the built CLI, so the tour's own `export`
// line must be what points annexctl at the cluster (KUBECONFIG is unset
// and no other annexctl is on PATH). Every command must exit 0; a few
// outputs and the cluster's state after install and uninstall are checked
// so that a broken feature fails here too.
func TestReadmeTour(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	commands, err := tourCommands(string(readme))
	if err != nil {
		t.Fatal(err)
	}

	// The folder the tour runs in: bin/annexctl and .annex/dev/kubeconfig.
	tour := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(tour, "bin", "annexctl"), "./cmd/annexctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/annexctl: %v\n%s", err, out)
	}
	_, _, exited, stateDir := startDev(t, 90*time.Second)
	if err := os.MkdirAll(filepath.Join(tour, ".annex", "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(stateDir, "kubeconfig"), filepath.Join(tour, ".annex", "dev", "kubeconfig")); err != nil {
		t.Fatal(err)
	}
	c := clientFromKubeconfig(t, filepath.Join(stateDir, "kubeconfig"))
	ctx := context.Background()

	// A moment after `make run` says it is running, the built-in catalog
	// is synced; the tour starts from there.
	waitFor(t, 60*time.Second, exited, func() error {
		cat := &v1alpha1.Catalog{}
		if err := c.Get(ctx, client.ObjectKey{Name: "builtin"}, cat); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(cat.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("catalog builtin not Ready: %+v", cat.Status.Conditions)
		}
		return nil
	})

	env := tourEnv(os.Environ())
	var exports []string
	installed := map[string]bool{} // namespace/name the tour installed and has not uninstalled
	for _, command := range commands {
		out, code, err := runTourCommand(tour, env, exports, command, 3*time.Minute)
		t.Logf("$ %s\n%s", command, out)
		if err != nil {
			t.Fatalf("README tour command %q: %v (exit code %d); output:\n%s", command, err, code, out)
		}
		if isExport(command) {
			exports = append(exports, command)
			continue
		}
		args := shellWords(command)
		if len(args) < 2 || args[0] != "annexctl" {
			continue
		}
		ns := flagValue(args, "-n", "--namespace")
		if ns == "" {
			ns = "default"
		}
		switch verb, operands := args[1], positional(args[2:]); verb {
		case "search":
			// The tour searches for what the demo extension offers.
			if !regexp.MustCompile(`(?m)^hello\s`).MatchString(out) {
				t.Errorf("%q does not list the built-in extension hello:\n%s", command, out)
			}
		case "show":
			for _, name := range operands {
				if !strings.Contains(out, name) || !regexp.MustCompile(`\b\d+\.\d+\.\d+\b`).MatchString(out) {
					t.Errorf("%q names neither %s nor any version:\n%s", command, name, out)
				}
			}
		case "install":
			for _, name := range operands {
				inst := &v1alpha1.ExtensionInstallation{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, inst); err != nil {
					t.Fatalf("after %q: installation %s/%s: %v", command, ns, name, err)
				}
				if slices.Contains(args, "--wait") && !meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) {
					t.Errorf("after %q (with --wait) installation %s/%s is not Ready: %+v", command, ns, name, inst.Status.Conditions)
				}
				installed[ns+"/"+name] = true
			}
		case "status":
			for key := range installed {
				name := key[strings.Index(key, "/")+1:]
				if !statusShowsReady(out, name) {
					t.Errorf("%q does not show the installed %s as Ready:\n%s", command, name, out)
				}
			}
		case "events":
			// Events of the installation itself, beyond the header.
			for _, name := range operands {
				if !strings.Contains(out, "ExtensionInstallation "+ns+"/"+name) {
					t.Errorf("%q shows no event of ExtensionInstallation %s/%s:\n%s", command, ns, name, out)
				}
			}
		case "uninstall":
			for _, name := range operands {
				delete(installed, ns+"/"+name)
				if !slices.Contains(args, "--wait") {
					continue
				}
				err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ExtensionInstallation{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("after %q (with --wait) installation %s/%s is still there (err=%v)", command, ns, name, err)
				}
			}
			// The uninstall went to the end: no installation is left in
			// the namespace, the dependencies Annex added included.
			if slices.Contains(args, "--wait") {
				waitFor(t, 90*time.Second, exited, func() error {
					list := &v1alpha1.ExtensionInstallationList{}
					if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
						return err
					}
					var left []string
					for _, inst := range list.Items {
						left = append(left, inst.Name)
					}
					if len(left) > 0 {
						return fmt.Errorf("after %q, installations left in %s: %v", command, ns, left)
					}
					return nil
				})
			}
		}
	}
}

// tourCommands returns the commands of the README's tour: the lines of the
// ```sh block between <!-- tour:begin --> and <!-- tour:end -->, without
// blank and comment-only lines, a line ending in a backslash joined with
// the next.
func tourCommands(readme string) ([]string, error) {
	_, rest, ok := strings.Cut(readme, "<!-- tour:begin -->")
	if !ok {
		return nil, errors.New("README.md has no <!-- tour:begin --> marker: the tour test needs it around the tour's ```sh block")
	}
	body, _, ok := strings.Cut(rest, "<!-- tour:end -->")
	if !ok {
		return nil, errors.New("README.md has <!-- tour:begin --> but no <!-- tour:end --> after it")
	}
	_, block, ok := strings.Cut(body, "```sh\n")
	if !ok {
		return nil, errors.New("README.md: no ```sh block between <!-- tour:begin --> and <!-- tour:end -->")
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		return nil, errors.New("README.md: the tour's ```sh block is not closed before <!-- tour:end -->")
	}
	var commands []string
	var pending string
	for line := range strings.Lines(block) {
		line = strings.TrimRight(line, "\n")
		if strings.HasSuffix(line, `\`) {
			pending += strings.TrimSuffix(line, `\`)
			continue
		}
		line = pending + line
		pending = ""
		if trimmed := strings.TrimSpace(line); trimmed != "" && !strings.HasPrefix(trimmed, "#") {
			commands = append(commands, trimmed)
		}
	}
	if len(commands) == 0 {
		return nil, errors.New("README.md: the tour's ```sh block has no commands")
	}
	return commands, nil
}

// tourEnv is environ without KUBECONFIG and without the PATH entries that
// hold an annexctl: the tour's own export line must supply both.
func tourEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		switch {
		case strings.HasPrefix(kv, "KUBECONFIG="):
		case strings.HasPrefix(kv, "PATH="):
			var keep []string
			for _, dir := range filepath.SplitList(strings.TrimPrefix(kv, "PATH=")) {
				if _, err := os.Stat(filepath.Join(dir, "annexctl")); err != nil {
					keep = append(keep, dir)
				}
			}
			env = append(env, "PATH="+strings.Join(keep, string(filepath.ListSeparator)))
		default:
			env = append(env, kv)
		}
	}
	return env
}

// runTourCommand runs command with bash in dir, after the export lines the
// tour ran before it, and returns its combined output and exit code. The
// command and everything it starts are killed after timeout.
func runTourCommand(dir string, env, exports []string, command string, timeout time.Duration) (string, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	script := strings.Join(append(slices.Clone(exports), command), "\n")
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), -1, fmt.Errorf("did not finish within %s", timeout)
	}
	code := 0
	if err != nil {
		code = -1
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		}
	}
	return string(out), code, err
}

func isExport(command string) bool { return strings.HasPrefix(command, "export ") }

// shellWords splits a simple command line into words, dropping a trailing
// # comment. The tour's commands need no quoting; quotes are stripped.
func shellWords(command string) []string {
	var words []string
	for _, w := range strings.Fields(command) {
		if strings.HasPrefix(w, "#") {
			break
		}
		words = append(words, strings.Trim(w, `'"`))
	}
	return words
}

// flagValue is the value of the first of names in args ("-n NS" or
// "-n=NS"), or "".
func flagValue(args []string, names ...string) string {
	for i, a := range args {
		for _, name := range names {
			if a == name && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, name+"="); ok {
				return v
			}
		}
	}
	return ""
}

// positional returns the operands of args: the words that are neither
// flags nor the values of the tour's flags that take one.
func positional(args []string) []string {
	takesValue := map[string]bool{"-n": true, "--namespace": true, "--set": true, "--values": true, "--version": true, "--cluster": true, "-f": true}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case takesValue[a]:
			i++
		case strings.HasPrefix(a, "-"):
		default:
			out = append(out, a)
		}
	}
	return out
}

// statusShowsReady reports whether a line of annexctl status output names
// the installation and says Ready.
func statusShowsReady(out, name string) bool {
	word := regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(name) + `($|[^\w-])`)
	s := bufio.NewScanner(strings.NewReader(out))
	for s.Scan() {
		if word.MatchString(s.Text()) && strings.Contains(s.Text(), "Ready") && !strings.Contains(s.Text(), "NotReady") {
			return true
		}
	}
	return false
}

// TestReadmeLayout checks the README's "## Layout" section against the
// tree, at the granularity the section itself uses:
//   - every path it names exists (stale entries fail);
//   - a folder is enumerated when the section names one of its
//     sub-folders; then it must name every sub-folder (except hidden ones,
//     testdata/ and the build output bin/). The repository root is
//     enumerated (api/, cmd/, ... are named), so every top-level folder
//     must be; so are internal/, cmd/, internal/controller/, etc.
//
// How the section names a folder: each line of its fenced block starts
// with a path ending in "/" (e.g. `internal/cli/`), optionally followed by
// sibling folders joined by commas (`internal/controller/hook/,
// imagepolicy/`); an indented
// line lists sub-folders of the entry above it (`  helm/ oci/ ...`). In
// the description after an entry, `name/`, or a word of a parenthesised
// list equal to one of the entry's sub-folders, names that sub-folder
// (`one package per kind (installation, catalog, ...)`); full paths there
// (`internal/cli`) are mentions, which must exist but name nothing.
func TestReadmeLayout(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, err := layoutBlock(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	entries, mentions := layoutPaths(block, func(dir string) []string { return subdirs(root, dir) })
	var stale []string
	for _, p := range append(slices.Clone(entries), mentions...) {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			stale = append(stale, p)
		}
	}
	missing := layoutMissing(entries, func(dir string) []string { return subdirs(root, dir) })
	for _, p := range stale {
		t.Errorf("README Layout names %s, which does not exist: remove or rename it", p)
	}
	for _, p := range missing {
		t.Errorf("README Layout does not name %s/ (a sibling of folders it lists): add a line for it", p)
	}
}

// layoutBlock is the fenced block of the README's "## Layout" section.
func layoutBlock(readme string) (string, error) {
	_, rest, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		return "", errors.New(`README.md has no "## Layout" section`)
	}
	if next := strings.Index(rest, "\n## "); next >= 0 {
		rest = rest[:next]
	}
	_, block, ok := strings.Cut(rest, "```\n")
	if !ok {
		return "", errors.New(`README.md: the "## Layout" section has no fenced block`)
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		return "", errors.New(`README.md: the "## Layout" section's fenced block is not closed`)
	}
	return block, nil
}

var (
	// layoutFolder is a folder as the Layout section writes it: a path
	// ending in "/", possibly followed by a comma.
	layoutFolder = regexp.MustCompile(`^[a-z0-9._-]+(/[a-z0-9._-]+)*/$`)
	// layoutMention is a full path in a description: internal/cli.
	layoutMention = regexp.MustCompile(`^[a-z0-9._-]+(/[a-z0-9._-]+)+/?$`)
)

// layoutPaths reads the Layout block: entries are the folders it names
// (without the trailing "/"), mentions the full paths its descriptions
// refer to. subdirs lists a folder's sub-folders (to recognise the words
// of a parenthesised list naming them).
func layoutPaths(block string, subdirs func(dir string) []string) (entries, mentions []string) {
	var subject string // the entry the current line describes
	for line := range strings.Lines(block) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		indented := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
		desc := fields
		if !indented {
			first := strings.TrimSuffix(fields[0], ",")
			if !layoutFolder.MatchString(first) {
				continue
			}
			subject = strings.TrimSuffix(first, "/")
			entries = append(entries, subject)
			// Siblings joined to it by commas: `hook/, imagepolicy/`.
			desc = fields[1:]
			for prev := fields[0]; len(desc) > 0 && strings.HasSuffix(prev, ","); {
				w := strings.TrimSuffix(desc[0], ",")
				if !layoutFolder.MatchString(w) || strings.Count(w, "/") != 1 {
					break
				}
				entries = append(entries, pathJoin(parentDir(subject), strings.TrimSuffix(w, "/")))
				prev, desc = desc[0], desc[1:]
			}
		}
		if subject == "" {
			continue
		}
		children := subdirs(subject)
		inParens := false
		for _, f := range desc {
			if strings.HasPrefix(f, "(") {
				inParens = true
			}
			w := strings.Trim(f, "`'\"()[],;:.")
			switch {
			case layoutMention.MatchString(w):
				mentions = append(mentions, strings.TrimSuffix(w, "/"))
			case layoutFolder.MatchString(w): // a bare `name/`: a sub-folder
				entries = append(entries, pathJoin(subject, strings.TrimSuffix(w, "/")))
			case inParens && slices.Contains(children, w): // (installation, catalog, ...)
				entries = append(entries, pathJoin(subject, w))
			}
			if strings.Contains(f, ")") {
				inParens = false
			}
		}
	}
	return entries, mentions
}

// layoutMissing returns the folders the section should name but does not:
// every sub-folder of a folder one of whose sub-folders it names (the
// repository root, "", included), sorted.
func layoutMissing(entries []string, subdirs func(dir string) []string) []string {
	named := map[string]bool{}
	for _, e := range entries {
		for p := e; p != ""; p = parentDir(p) {
			named[p] = true
		}
	}
	enumerated := map[string]bool{}
	for p := range named {
		enumerated[parentDir(p)] = true
	}
	var missing []string
	for dir := range enumerated {
		for _, child := range subdirs(dir) {
			if p := pathJoin(dir, child); !named[p] {
				missing = append(missing, p)
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// subdirs lists the sub-folders of root/dir that the Layout section is
// about: not hidden, not testdata/ (fixtures of the package above), and
// at the top not bin/ (build output, ignored by git).
func subdirs(root, dir string) []string {
	list, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range list {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || name == "testdata" || (dir == "" && name == "bin") {
			continue
		}
		out = append(out, name)
	}
	return out
}

func parentDir(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i]
	}
	return ""
}

func pathJoin(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// TestReadmeMakeTargets checks the commands the README writes in code (a
// `code span` or a fenced block): every `make TARGET` names a target of
// the Makefile, and every `go run ./PKG` a folder of this repository with
// a main package.
func TestReadmeMakeTargets(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := makeTargets(string(makefile))
	makes, goRuns := readmeInvocations(string(readme))
	if len(makes) == 0 {
		t.Fatal("README.md mentions no `make TARGET` in code: the parser is broken or the README lost its Set up section")
	}
	for _, m := range makes {
		if !targets[m.target] {
			t.Errorf("README.md line %d: `make %s` — the Makefile has no target %s", m.line, m.target, m.target)
		}
	}
	for _, g := range goRuns {
		if err := isMainPackage(filepath.Join(root, filepath.FromSlash(g.target))); err != nil {
			t.Errorf("README.md line %d: `go run ./%s`: %v", g.line, g.target, err)
		}
	}
}

// invocation is a target (a make target, or a package path without its
// leading "./") the README runs, with the line it is on.
type invocation struct {
	target string
	line   int
}

var (
	inlineCode = regexp.MustCompile("`[^`\n]+`")
	makeCall   = regexp.MustCompile(`(?:^|[\s;&|(])make((?:\s+[^\s;&|)#]+)+)`)
	goRunCall  = regexp.MustCompile(`(?:^|[\s;&|(])go run \./([A-Za-z0-9_./-]*[A-Za-z0-9_-])`)
)

// readmeInvocations finds `make TARGET` and `go run ./PKG` in the code of
// a Markdown text: fenced blocks and inline code spans. Of make's
// arguments, VAR=value and -flags are skipped; the first other word is the
// target.
func readmeInvocations(markdown string) (makes, goRuns []invocation) {
	inFence := false
	for i, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		var code []string
		if inFence {
			code = []string{line}
		} else {
			for _, span := range inlineCode.FindAllString(line, -1) {
				code = append(code, strings.Trim(span, "`"))
			}
		}
		for _, c := range code {
			for _, m := range makeCall.FindAllStringSubmatch(c, -1) {
				for _, w := range strings.Fields(m[1]) {
					if strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
						continue
					}
					// Prose inside a code block ("(make image, make
					// image-oci)") ends a target with punctuation.
					makes = append(makes, invocation{target: strings.TrimRight(w, ",.;:"), line: i + 1})
					break
				}
			}
			for _, m := range goRunCall.FindAllStringSubmatch(c, -1) {
				goRuns = append(goRuns, invocation{target: strings.TrimSuffix(m[1], "/"), line: i + 1})
			}
		}
	}
	return makes, goRuns
}

// makeTargets returns the explicit targets of a Makefile: the names before
// ":" at the start of a rule line (not ":=" assignments, not .SPECIAL
// targets).
func makeTargets(makefile string) map[string]bool {
	rule := regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9_./-]*(?:\s+[A-Za-z0-9_][A-Za-z0-9_./-]*)*)\s*:([^=]|$)`)
	targets := map[string]bool{}
	for line := range strings.Lines(makefile) {
		if m := rule.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
			for _, name := range strings.Fields(m[1]) {
				targets[name] = true
			}
		}
	}
	return targets
}

// isMainPackage says why dir is not a folder holding a main package.
func isMainPackage(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("%s holds no Go files", dir)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if regexp.MustCompile(`(?m)^package main\b`).Match(data) {
			return nil
		}
	}
	return fmt.Errorf("%s is not a main package", dir)
}

// TestReadmeLayoutRules checks the Layout reading on a small tree: siblings
// after an entry, an indented line of sub-folders, a parenthesised list, a
// mention, and what is stale or missing.
func TestReadmeLayoutRules(t *testing.T) {
	tree := map[string][]string{
		"":             {"api", "cmd", "internal", "docs"},
		"cmd":          {"a"},
		"internal":     {"ctl", "cat", "x"},
		"internal/ctl": {"one", "two", "hook", "policy"},
		"internal/cat": {"helm", "oci", "sources"},
	}
	subdirs := func(dir string) []string { return tree[dir] }
	block := "api/v1/            types\n" +
		"cmd/a/             thin over internal/x\n" +
		"internal/ctl/      per kind (one, two)\n" +
		"internal/ctl/hook/, policy/, gone/  hooks\n" +
		"internal/cat/      sources, not oci/ (a sub-folder)\n" +
		"  helm/ oci/   kinds; sources/ dispatches\n"
	entries, mentions := layoutPaths(block, subdirs)
	wantEntries := []string{"api/v1", "cmd/a", "internal/ctl", "internal/ctl/one", "internal/ctl/two",
		"internal/ctl/hook", "internal/ctl/policy", "internal/ctl/gone", "internal/cat",
		"internal/cat/oci", "internal/cat/helm", "internal/cat/oci", "internal/cat/sources"}
	if !slices.Equal(entries, wantEntries) {
		t.Errorf("entries %q, want %q", entries, wantEntries)
	}
	if !slices.Equal(mentions, []string{"internal/x"}) {
		t.Errorf("mentions %q, want [internal/x]", mentions)
	}
	// docs/ and internal/x/ are unnamed siblings; api/ is not enumerated
	// beyond v1 (tree has no api entry), so nothing under it is missing.
	if got, want := layoutMissing(entries, subdirs), []string{"docs", "internal/x"}; !slices.Equal(got, want) {
		t.Errorf("missing %q, want %q", got, want)
	}
}

// TestReadmeInvocationRules checks which make and go run calls are read:
// code only, VAR=value skipped, prose ignored.
func TestReadmeInvocationRules(t *testing.T) {
	md := "Run `make run CLUSTERS=2`; changes make a new digest.\n" +
		"```sh\n" +
		"make VERSION=1 build   # comment\n" +
		"go run ./cmd/annexctl resolve\n" +
		"```\n"
	makes, goRuns := readmeInvocations(md)
	if want := []invocation{{"run", 1}, {"build", 3}}; !slices.Equal(makes, want) {
		t.Errorf("make calls %v, want %v", makes, want)
	}
	if want := []invocation{{"cmd/annexctl", 4}}; !slices.Equal(goRuns, want) {
		t.Errorf("go run calls %v, want %v", goRuns, want)
	}
	targets := makeTargets("X := 1\n.PHONY: run\nrun: build ## r\nbuild:\n\tgo build\nimage-binaries = x\n")
	if !targets["run"] || !targets["build"] || targets["X"] || targets["image-binaries"] || len(targets) != 2 {
		t.Errorf("targets %v, want run and build", targets)
	}
}

// TestReadmeTourRunner checks that a failing or hanging tour command is
// reported, and that the export lines before a command are in effect.
func TestReadmeTourRunner(t *testing.T) {
	dir := t.TempDir()
	env := tourEnv(append(os.Environ(), "KUBECONFIG=/elsewhere"))
	if out, code, err := runTourCommand(dir, env, []string{"export X=$PWD/y"}, `echo "$X $KUBECONFIG"   # a comment`, time.Minute); err != nil || code != 0 || out != dir+"/y \n" {
		t.Errorf("echo: out %q, code %d, err %v; want %q, 0, nil", out, code, err, dir+"/y \n")
	}
	if _, code, err := runTourCommand(dir, env, nil, "exit 3", time.Minute); err == nil || code != 3 {
		t.Errorf("exit 3: code %d, err %v", code, err)
	}
	if _, _, err := runTourCommand(dir, env, nil, "sleep 30", time.Second); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("sleep 30 with a 1s timeout: err %v", err)
	}
}
