package e2e

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/annex-platform/annex/internal/testenv"
)

// The documentation's promises, checked against the repository: every
// relative link and anchor of README.md and docs/ resolves, every page of
// docs/ is one click from the README, every repository path and make target
// the docs name exists, and the troubleshooting page lists every condition
// reason the API defines. The guides themselves run in walkthrough_test.go.

// docsFiles returns README.md and every Markdown file under docs/, relative
// to root with forward slashes, sorted.
func docsFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// TestDocsLinks checks every relative link of README.md and docs/**/*.md:
// the file it points to exists, and its #anchor is a heading of the target
// (or of the page itself), by GitHub's anchor rules.
func TestDocsLinks(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string][]string{} // file → its anchors, read once
	anchorsOf := func(file string) []string {
		if a, ok := anchors[file]; ok {
			return a
		}
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		anchors[file] = headingAnchors(string(data))
		return anchors[file]
	}
	for _, file := range docsFiles(t, root) {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(data)) {
			if problem := checkLink(root, file, l.target, anchorsOf); problem != "" {
				t.Errorf("%s line %d: link %q: %s", file, l.line, l.target, problem)
			}
		}
	}
}

// checkLink says what is wrong with a link of file (relative to root), or
// "" when it resolves. Links with a scheme (https:, mailto:) are not
// followed.
func checkLink(root, file, target string, anchorsOf func(file string) []string) string {
	if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
		info, err := os.Stat(filepath.Join(root, dest))
		if err != nil {
			return fmt.Sprintf("%s does not exist", dest)
		}
		if info.IsDir() || !strings.HasSuffix(dest, ".md") {
			if anchor != "" {
				return fmt.Sprintf("an anchor into %s, which is not a Markdown page", dest)
			}
			return ""
		}
	}
	if anchor != "" && !slices.Contains(anchorsOf(dest), anchor) {
		return fmt.Sprintf("%s has no heading with anchor #%s (it has %s)", dest, anchor, strings.Join(anchorsOf(dest), ", "))
	}
	return ""
}

// mdLink is a link target on a line of a Markdown text.
type mdLink struct {
	target string
	line   int
}

var (
	// linkPattern is an inline link or image: [text](target "title").
	linkPattern = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// headingPattern is an ATX heading.
	headingPattern = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// markdownLinks returns the inline links and images of a Markdown text,
// outside fenced blocks and code spans.
func markdownLinks(markdown string) []mdLink {
	var links []mdLink
	for i, line := range proseLines(markdown) {
		if line == "" {
			continue
		}
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range linkPattern.FindAllStringSubmatch(line, -1) {
			links = append(links, mdLink{target: m[1], line: i + 1})
		}
	}
	return links
}

// proseLines returns the lines of a Markdown text with the lines of fenced
// blocks (fences included) blanked, so that indexes stay line numbers - 1.
func proseLines(markdown string) []string {
	lines := strings.Split(markdown, "\n")
	inFence := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			lines[i] = ""
			continue
		}
		if inFence {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text, in order: a repeated anchor gets -1, -2, ... appended.
func headingAnchors(markdown string) []string {
	var anchors []string
	seen := map[string]int{}
	for _, line := range proseLines(markdown) {
		m := headingPattern.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := githubSlug(m[2])
		if n := seen[slug]; n > 0 {
			anchors = append(anchors, slug+"-"+strconv.Itoa(n))
		} else {
			anchors = append(anchors, slug)
		}
		seen[slug]++
	}
	return anchors
}

// githubSlug is the anchor GitHub derives from a heading's text: the text
// of links and code kept, lower case, every character that is not a
// letter, a digit, "-" or "_" dropped, spaces turned into "-".
func githubSlug(heading string) string {
	heading = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	heading = regexp.MustCompile(`<[^>]+>`).ReplaceAllString(heading, "")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// TestDocsReachable checks that every page of docs/ is one click from the
// README: linked from README.md itself, so a newcomer finds any task there.
func TestDocsReachable(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range markdownLinks(string(readme)) {
		path, _, _ := strings.Cut(l.target, "#")
		linked[filepath.ToSlash(filepath.Clean(path))] = true
	}
	for _, file := range docsFiles(t, root) {
		if file != "README.md" && !linked[file] {
			t.Errorf("%s is not linked from README.md: add it to the Documentation table", file)
		}
	}
}

// repoPath is a code span naming a file or folder of the repository.
var repoPath = regexp.MustCompile(`^(api|cmd|internal|config|charts|hack|test|docs)/[A-Za-z0-9._/-]*$`)

// TestDocsPaths checks, as the README's Layout check does for folders, that
// every repository path the docs write in code (`internal/gate`,
// `config/samples/profile.yaml`) exists, and that every `make TARGET` and
// `go run ./PKG` in their code names a Makefile target and a main package.
func TestDocsPaths(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets := makeTargets(string(makefile))
	for _, file := range docsFiles(t, root) {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range codePaths(string(data)) {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p.target))); err != nil {
				t.Errorf("%s line %d: `%s` does not exist: fix the path or remove it", file, p.line, p.target)
			}
		}
		makes, goRuns := readmeInvocations(string(data))
		for _, m := range makes {
			if !targets[m.target] {
				t.Errorf("%s line %d: `make %s` — the Makefile has no target %s", file, m.line, m.target, m.target)
			}
		}
		for _, g := range goRuns {
			if err := isMainPackage(filepath.Join(root, filepath.FromSlash(g.target))); err != nil {
				t.Errorf("%s line %d: `go run ./%s`: %v", file, g.line, g.target, err)
			}
		}
	}
}

// codePaths returns the code spans of a Markdown text's prose that name a
// repository path (see repoPath), without a trailing "/".
func codePaths(markdown string) []invocation {
	var out []invocation
	for i, line := range proseLines(markdown) {
		for _, span := range inlineCode.FindAllString(line, -1) {
			if p := strings.Trim(span, "`"); repoPath.MatchString(p) {
				out = append(out, invocation{target: strings.TrimSuffix(p, "/"), line: i + 1})
			}
		}
	}
	return out
}

// TestDocsTroubleshootingReasons checks that docs/operations/troubleshooting.md
// has a row for every condition reason api/v1alpha1 defines (a constant
// named Reason*), and none for a reason it does not define.
func TestDocsTroubleshootingReasons(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	defined, err := apiReasons(filepath.Join(root, "api", "v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(defined) == 0 {
		t.Fatal("api/v1alpha1 defines no Reason* constants: the parser is broken")
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "operations", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := reasonRows(string(page))
	for name, value := range defined {
		if !listed[value] {
			t.Errorf("troubleshooting.md has no row for reason %s (%s): add `| `%s` | meaning | what to do |`", value, name, value)
		}
	}
	values := map[string]bool{}
	for _, v := range defined {
		values[v] = true
	}
	for value := range listed {
		if !values[value] {
			t.Errorf("troubleshooting.md lists reason %s, which api/v1alpha1 does not define", value)
		}
	}
}

// apiReasons returns the string constants named Reason* of the Go package
// in dir (its non-test files), by name.
func apiReasons(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	reasons := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Reason") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return nil, fmt.Errorf("%s: %s is not a string literal", f, name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, err
					}
					reasons[name.Name] = v
				}
			}
		}
	}
	return reasons, nil
}

// reasonRows returns the reasons a troubleshooting page lists: the first
// cell of table rows written as | `Reason` | ....
func reasonRows(page string) map[string]bool {
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Za-z]+)` \\|").FindAllStringSubmatch(page, -1) {
		rows[m[1]] = true
	}
	return rows
}

// TestDocsRules checks the readers above on small texts: anchors by
// GitHub's rules, links outside code, code paths, and reason rows.
func TestDocsRules(t *testing.T) {
	slugs := []struct{ heading, want string }{
		{"Set up", "set-up"}, // spaces become hyphens
		{"`Hook` (cluster-scoped)", "hook-cluster-scoped"},                            // code and punctuation dropped
		{"The contract with a hook's resource", "the-contract-with-a-hooks-resource"}, // apostrophe dropped
		{"Fleet and `annex dev`", "fleet-and-annex-dev"},
		{"Scoped grants: a cluster-wide request, granted", "scoped-grants-a-cluster-wide-request-granted"},
		{"[Links](x.md) keep their text", "links-keep-their-text"},
		{"annexctl status → why", "annexctl-status--why"}, // a symbol is dropped, its spaces stay
	}
	for _, c := range slugs {
		if got := githubSlug(c.heading); got != c.want {
			t.Errorf("githubSlug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}

	md := "# Title\n" +
		"See [a](a.md#x) and `[not](code.md)` and ![img](p.png).\n" +
		"```sh\n# not a heading\necho [no](link.md)\n```\n" +
		"## Title\n" +
		"Paths: `internal/gate` and `config/samples/x.yaml/`, not `make run` nor `bin/annex`.\n" +
		"| `Ready` | x |\n| `NotReady` | y |\n"
	// The repeated heading gets -1; the comment in the fence is no heading.
	if got, want := headingAnchors(md), []string{"title", "title-1"}; !slices.Equal(got, want) {
		t.Errorf("anchors %q, want %q", got, want)
	}
	// Links in code spans and fences are not links.
	if got, want := markdownLinks(md), []mdLink{{"a.md#x", 2}, {"p.png", 2}}; !slices.Equal(got, want) {
		t.Errorf("links %v, want %v", got, want)
	}
	// Only spans under a repository folder are paths; a trailing / goes.
	if got, want := codePaths(md), []invocation{{"internal/gate", 8}, {"config/samples/x.yaml", 8}}; !slices.Equal(got, want) {
		t.Errorf("code paths %v, want %v", got, want)
	}
	if got := reasonRows(md); len(got) != 2 || !got["Ready"] || !got["NotReady"] {
		t.Errorf("reason rows %v, want Ready and NotReady", got)
	}
}

// TestDocsCheckLink checks which links resolve, on a tree of two pages.
func TestDocsCheckLink(t *testing.T) {
	root := t.TempDir()
	for path, text := range map[string]string{
		"README.md":          "# Annex\n## Set up\n",
		"docs/guides/one.md": "# One\n## Step two\n",
		"docs/pic.png":       "png",
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	anchorsOf := func(file string) []string {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		return headingAnchors(string(data))
	}
	cases := []struct {
		file, target string
		ok           bool
	}{
		{"docs/guides/one.md", "../../README.md#set-up", true}, // up two folders, anchor there
		{"docs/guides/one.md", "#step-two", true},              // an anchor of the page itself
		{"docs/guides/one.md", "../pic.png", true},             // not Markdown: existence only
		{"README.md", "docs/guides/one.md#step-three", false},  // no such heading
		{"README.md", "docs/guides/two.md", false},             // no such file
		{"README.md", "https://example.com/nowhere#x", true},   // not followed
		{"README.md", "docs/pic.png#x", false},                 // an anchor into a picture
		{"docs/guides/one.md", "../reference/api.md", false},   // a missing generated page fails too
	}
	for _, c := range cases {
		problem := checkLink(root, c.file, c.target, anchorsOf)
		if (problem == "") != c.ok {
			t.Errorf("checkLink(%s, %s) = %q, want ok=%v", c.file, c.target, problem, c.ok)
		}
	}
}
