package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// The guides of docs/ run word for word, as the README's tour does. A
// guide marks what runs:
//
//	<!-- walkthrough:begin ENV -->   ENV: hub (make run), clusters=N
//	                                 (make run CLUSTERS=N), none (no cluster)
//	```sh                            run with bash, in order; every command
//	...                              must succeed (a guide that shows a
//	```                              failure writes `cmd || echo "exit code $?"`)
//	```text                          right after a sh block: lines its output
//	...                              must contain, in order ("…" matches anything)
//	```
//	<!-- walkthrough:apply [wait=Ready] -->   the yaml block after it is applied
//	<!-- walkthrough:delete -->               or deleted (waiting until gone), as
//	                                          kubectl apply -f / delete -f would
//	<!-- walkthrough:apply refused -->        the yaml block must be refused; the
//	```yaml … ``` ```text … ```               text block after it: lines the refusal
//	                                          must contain, in order
//	<!-- walkthrough:get -->                  each object the yaml block names is read
//	```yaml … ``` ```text … ```               at its apiVersion, as kubectl get -o yaml
//	                                          does; the text block: lines its YAML
//	                                          must contain, in order
//	<!-- walkthrough:end -->
//
// Manifests are applied by the test itself, with the admin kubeconfig: a
// guide shows them as YAML for the reader to apply with the tool of their
// choice, so no kubectl is needed to run the guides.

// walkthrough is one marked region of a guide.
type walkthrough struct {
	file  string // relative to the repository root
	line  int    // of the begin marker
	env   string // hub, clusters=N or none
	steps []walkStep
}

// walkStep is a shell block to run, or manifests to apply, delete or read.
type walkStep struct {
	kind    string // run, apply, delete or get
	line    int    // of the block's opening fence
	body    string
	want    []string // run, get, refused apply: lines its output must contain, in order
	wait    string   // apply: a condition every object must reach, or ""
	refused bool     // apply: every object must be refused
}

// wantsText reports whether s must be followed by a text block: a read or
// a refusal shows what the reader sees.
func (s walkStep) wantsText() bool { return s.kind == "get" || s.refused }

var (
	walkBegin  = regexp.MustCompile(`^<!-- walkthrough:begin (hub|none|clusters=[1-9]) -->$`)
	walkMarker = regexp.MustCompile(`^<!-- walkthrough:(apply|delete|get)( wait=[A-Za-z]+| refused)? -->$`)
)

// parseWalkthroughs reads the marked regions of a Markdown text. It refuses
// what would silently run less than the page shows: markers outside a
// region, an apply or delete marker not followed by a yaml block, a text
// block that follows no sh block, an unclosed region.
func parseWalkthroughs(file, markdown string) ([]walkthrough, error) {
	var (
		out     []walkthrough
		cur     *walkthrough
		pending string // apply, delete or get marker waiting for its yaml block
		wait    string
		refused bool
		fence   string // info string of the open fence, "" outside
		fenceAt int
		body    []string
	)
	lines := strings.Split(markdown, "\n")
	for i, line := range lines {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if !strings.HasPrefix(trimmed, "```") {
				body = append(body, line)
				continue
			}
			text := strings.Join(body, "\n") + "\n"
			switch {
			case cur == nil:
			case pending != "":
				if fence != "yaml" {
					return nil, fmt.Errorf("%s:%d: walkthrough:%s must be followed by a ```yaml block", file, fenceAt, pending)
				}
				if err := needsText(file, cur); err != nil {
					return nil, err
				}
				cur.steps = append(cur.steps, walkStep{kind: pending, line: fenceAt, body: text, wait: wait, refused: refused})
				pending, wait, refused = "", "", false
			case fence == "sh":
				if err := needsText(file, cur); err != nil {
					return nil, err
				}
				cur.steps = append(cur.steps, walkStep{kind: "run", line: fenceAt, body: text})
			case fence == "text":
				last := len(cur.steps) - 1
				if last < 0 || cur.steps[last].kind != "run" && !cur.steps[last].wantsText() || cur.steps[last].want != nil {
					return nil, fmt.Errorf("%s:%d: a ```text block must follow a ```sh block of the walkthrough, or the yaml block of a walkthrough:get or walkthrough:apply refused", file, fenceAt)
				}
				for _, w := range body {
					if strings.TrimSpace(w) != "" {
						cur.steps[last].want = append(cur.steps[last].want, w)
					}
				}
			}
			fence, body = "", nil
			continue
		}
		switch m := walkMarker.FindStringSubmatch(trimmed); {
		case strings.HasPrefix(trimmed, "```"):
			fence, fenceAt = strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), n
			if fence == "" {
				fence = "plain"
			}
		case walkBegin.MatchString(trimmed):
			if cur != nil {
				return nil, fmt.Errorf("%s:%d: walkthrough:begin inside the walkthrough of line %d", file, n, cur.line)
			}
			cur = &walkthrough{file: file, line: n, env: walkBegin.FindStringSubmatch(trimmed)[1]}
		case trimmed == "<!-- walkthrough:end -->":
			if cur == nil || pending != "" {
				return nil, fmt.Errorf("%s:%d: walkthrough:end without a begin, or after a marker with no block", file, n)
			}
			if len(cur.steps) == 0 {
				return nil, fmt.Errorf("%s:%d: the walkthrough of line %d has no ```sh block", file, n, cur.line)
			}
			if err := needsText(file, cur); err != nil {
				return nil, err
			}
			out = append(out, *cur)
			cur = nil
		case m != nil:
			if cur == nil {
				return nil, fmt.Errorf("%s:%d: walkthrough:%s outside a walkthrough", file, n, m[1])
			}
			if err := needsText(file, cur); err != nil {
				return nil, err
			}
			pending, refused = m[1], m[2] == " refused"
			wait, _ = strings.CutPrefix(m[2], " wait=")
			if refused {
				wait = ""
			}
			if refused && pending != "apply" || m[1] == "get" && m[2] != "" {
				return nil, fmt.Errorf("%s:%d: %s: only walkthrough:apply may be refused, and walkthrough:get takes no wait", file, n, trimmed)
			}
		case strings.HasPrefix(trimmed, "<!-- walkthrough"):
			return nil, fmt.Errorf("%s:%d: unknown marker %s", file, n, trimmed)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: walkthrough:begin without walkthrough:end", file, cur.line)
	}
	return out, nil
}

// needsText refuses a walkthrough whose last step shows no text block
// although it must (walkStep.wantsText).
func needsText(file string, w *walkthrough) error {
	if n := len(w.steps); n > 0 && w.steps[n-1].wantsText() && w.steps[n-1].want == nil {
		return fmt.Errorf("%s:%d: a walkthrough:get or walkthrough:apply refused must be followed by a ```text block of what it shows", file, w.steps[n-1].line)
	}
	return nil
}

// matchOutput checks that out contains the wanted lines in order: each is
// found on a line at or after the one the previous matched, spaces
// matching any run of spaces and "…" anything.
func matchOutput(out string, want []string) error {
	lines := strings.Split(out, "\n")
	at := 0
	for _, w := range want {
		var pieces []string
		for _, piece := range strings.Split(w, "…") {
			var words []string
			for _, f := range strings.Fields(piece) {
				words = append(words, regexp.QuoteMeta(f))
			}
			pieces = append(pieces, strings.Join(words, `\s+`))
		}
		pattern := regexp.MustCompile(strings.Join(pieces, ".*"))
		for at < len(lines) && !pattern.MatchString(lines[at]) {
			at++
		}
		if at == len(lines) {
			return fmt.Errorf("the output has no line with %q (after the lines matched before it)", strings.TrimSpace(w))
		}
	}
	return nil
}

// guideWalkthroughs returns the walkthroughs of docs/guides/, by file.
func guideWalkthroughs(t *testing.T, root string) []walkthrough {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "guides", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var all []walkthrough
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		ws, err := parseWalkthroughs(filepath.ToSlash(rel), string(data))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ws...)
	}
	return all
}

// walkFolder lays out a folder as the repository root is after `make run`:
// every entry of the repository linked in, bin/annexctl (and
// bin/kubectl-annex) freshly built, and .annex/dev the state of the running
// `annex dev` (stateDir; none when empty).
func walkFolder(t *testing.T, root, stateDir string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name := e.Name(); name != "bin" && !strings.HasPrefix(name, ".") {
			if err := os.Symlink(filepath.Join(root, name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", "annexctl"), "./cmd/annexctl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/annexctl: %v\n%s", err, out)
	}
	if err := os.Link(filepath.Join(dir, "bin", "annexctl"), filepath.Join(dir, "bin", "kubectl-annex")); err != nil {
		t.Fatal(err)
	}
	if stateDir != "" {
		if err := os.MkdirAll(filepath.Join(dir, ".annex"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(stateDir, filepath.Join(dir, ".annex", "dev")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDocsGuides runs every walkthrough of docs/guides/ word for word: the
// ones that need no cluster in a folder of their own, the `make run` ones
// one after another on one `annex dev`, and the ones that need managed
// clusters on one `annex dev --clusters N` per N. Each walkthrough must
// leave no installation, policy or profile behind, as its own clean-up
// steps promise, so that the next one starts from `make run`'s state.
func TestDocsGuides(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	byEnv := map[string][]walkthrough{}
	for _, w := range guideWalkthroughs(t, root) {
		byEnv[w.env] = append(byEnv[w.env], w)
	}
	if len(byEnv["hub"]) == 0 {
		t.Fatal("no guide has a walkthrough:begin hub region: the markers or the parser are broken")
	}
	envs := make([]string, 0, len(byEnv))
	for env := range byEnv {
		envs = append(envs, env)
	}
	sort.Strings(envs)
	for _, env := range envs {
		t.Run(env, func(t *testing.T) {
			start := time.Now()
			var dir string
			var c client.Client
			var exited chan error
			switch {
			case env == "none":
				dir = walkFolder(t, root, "")
			default:
				var args []string
				if n, ok := strings.CutPrefix(env, "clusters="); ok {
					testenv.RequireWorkloadsBinDirAt(t, filepath.Join(filepath.Dir(testenv.RequireWorkloadsBinDir(t)), mustPreviousVersion(t)))
					args = []string{"--clusters", n}
				}
				var stateDir string
				_, _, exited, stateDir = startDev(t, 3*time.Minute, args...)
				dir = walkFolder(t, root, stateDir)
				c = clientFromKubeconfig(t, filepath.Join(stateDir, "kubeconfig"))
				waitDevReady(t, c, exited)
			}
			t.Logf("%s ready in %s", env, time.Since(start).Round(time.Second))
			for _, w := range byEnv[env] {
				t.Run(fmt.Sprintf("%s:%d", filepath.Base(w.file), w.line), func(t *testing.T) {
					began := time.Now()
					runWalkthrough(t, w, dir, c)
					if c != nil {
						waitCleanedUp(t, c, exited, w)
					}
					t.Logf("%s:%d ran in %s", w.file, w.line, time.Since(began).Round(time.Second))
				})
			}
		})
	}
}

// waitDevReady waits, as a reader does a moment after `make run` says it
// is running, until the built-in catalog is synced and every
// ManagedCluster is reachable.
func waitDevReady(t *testing.T, c client.Client, exited chan error) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, 2*time.Minute, exited, func() error {
		cat := &v1alpha1.Catalog{}
		if err := c.Get(ctx, client.ObjectKey{Name: "builtin"}, cat); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(cat.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("catalog builtin not Ready: %+v", cat.Status.Conditions)
		}
		clusters := &v1alpha1.ManagedClusterList{}
		if err := c.List(ctx, clusters); err != nil {
			return err
		}
		for _, mc := range clusters.Items {
			if !meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReady) {
				return fmt.Errorf("ManagedCluster %s not Ready: %+v", mc.Name, mc.Status.Conditions)
			}
		}
		return nil
	})
}

// runWalkthrough runs w's steps in dir; c applies and deletes manifests.
func runWalkthrough(t *testing.T, w walkthrough, dir string, c client.Client) {
	t.Helper()
	env := tourEnv(os.Environ())
	var exports []string
	for _, s := range w.steps {
		where := fmt.Sprintf("%s:%d", w.file, s.line)
		switch s.kind {
		case "run":
			out, code, err := runTourCommand(dir, env, exports, "set -o pipefail\n"+s.body, 8*time.Minute)
			t.Logf("%s:\n%s---\n%s", where, s.body, out)
			if err != nil {
				t.Fatalf("%s: %v (exit code %d); output:\n%s", where, err, code, out)
			}
			if err := matchOutput(out, s.want); err != nil {
				t.Fatalf("%s: %v; output:\n%s", where, err, out)
			}
			for line := range strings.Lines(s.body) {
				if isExport(strings.TrimSpace(line)) {
					exports = append(exports, strings.TrimSpace(line))
				}
			}
		case "get":
			out := readManifestsYAML(t, where, c, s.body)
			t.Logf("%s: read\n%s", where, out)
			if err := matchOutput(out, s.want); err != nil {
				t.Fatalf("%s: %v; read:\n%s", where, err, out)
			}
		case "apply", "delete":
			if c == nil {
				t.Fatalf("%s: walkthrough:%s in a walkthrough without a cluster", where, s.kind)
			}
			objs, err := decodeManifests([]byte(s.body))
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			for _, obj := range objs {
				var err error
				switch {
				case s.refused:
					err = applyManifest(c, obj, "")
					if err == nil {
						t.Fatalf("%s: %s %s was applied; the guide says it is refused", where, obj.GetKind(), client.ObjectKeyFromObject(obj))
					}
					t.Logf("%s: refused: %v", where, err)
					if mismatch := matchOutput(err.Error(), s.want); mismatch != nil {
						t.Fatalf("%s: %v; the refusal: %v", where, mismatch, err)
					}
					continue
				case s.kind == "apply":
					err = applyManifest(c, obj, s.wait)
				default:
					err = deleteManifest(c, obj)
				}
				if err != nil {
					t.Fatalf("%s: %s %s %s: %v", where, s.kind, obj.GetKind(), client.ObjectKeyFromObject(obj), err)
				}
				t.Logf("%s: %s %s %s", where, s.kind, obj.GetKind(), client.ObjectKeyFromObject(obj))
			}
		}
	}
}

// readManifestsYAML reads each object body names at its apiVersion, as
// kubectl get -o yaml would, and returns them as YAML documents.
func readManifestsYAML(t *testing.T, where string, c client.Client, body string) string {
	t.Helper()
	if c == nil {
		t.Fatalf("%s: walkthrough:get in a walkthrough without a cluster", where)
	}
	objs, err := decodeManifests([]byte(body))
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	var docs []string
	for _, obj := range objs {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(obj.GroupVersionKind())
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
			t.Fatalf("%s: get %s %s: %v", where, obj.GetKind(), client.ObjectKeyFromObject(obj), err)
		}
		cur.SetManagedFields(nil)
		data, err := yaml.Marshal(cur.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	return strings.Join(docs, "---\n")
}

// applyManifest creates obj, or merges it into the object of its name (as
// kubectl apply does for the fields it sets), then waits until its
// condition wait is True when wait is not "".
func applyManifest(c client.Client, obj *unstructured.Unstructured, wait string) error {
	ctx := context.Background()
	err := c.Create(ctx, obj.DeepCopy())
	if apierrors.IsAlreadyExists(err) {
		patch, jerr := json.Marshal(obj.Object)
		if jerr != nil {
			return jerr
		}
		err = c.Patch(ctx, obj.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
	}
	if err != nil || wait == "" {
		return err
	}
	return poll(3*time.Minute, func() error {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(obj.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
		for _, cond := range conds {
			if m, ok := cond.(map[string]any); ok && m["type"] == wait && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("condition %s is not True: %v", wait, conds)
	})
}

// deleteManifest deletes the object obj names and waits until it is gone,
// as kubectl delete does: that object, by UID — a controller may create
// another of the same name at once (the example operator does, for a
// Banner whose ConfigMap someone else held).
func deleteManifest(c client.Client, obj *unstructured.Unstructured) error {
	ctx := context.Background()
	before := &unstructured.Unstructured{}
	before.SetGroupVersionKind(obj.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), before); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if err := c.Delete(ctx, before.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return poll(3*time.Minute, func() error {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(obj.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur)
		if apierrors.IsNotFound(err) || (err == nil && cur.GetUID() != before.GetUID()) {
			return nil
		}
		return fmt.Errorf("still there (err=%v, finalizers %v)", err, cur.GetFinalizers())
	})
}

// poll calls f every 200ms until it returns nil, at most timeout; the
// error is f's last.
func poll(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitCleanedUp fails unless, shortly after w ended, no installation,
// ApprovalPolicy or ExtensionProfile is left on the hub.
func waitCleanedUp(t *testing.T, c client.Client, exited chan error, w walkthrough) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, 2*time.Minute, exited, func() error {
		var left []string
		insts := &v1alpha1.ExtensionInstallationList{}
		policies := &v1alpha1.ApprovalPolicyList{}
		profiles := &v1alpha1.ExtensionProfileList{}
		for _, list := range []client.ObjectList{insts, policies, profiles} {
			if err := c.List(ctx, list); err != nil {
				return err
			}
		}
		for _, i := range insts.Items {
			left = append(left, "ExtensionInstallation "+i.Namespace+"/"+i.Name)
		}
		for _, p := range policies.Items {
			left = append(left, "ApprovalPolicy "+p.Name)
		}
		for _, p := range profiles.Items {
			left = append(left, "ExtensionProfile "+p.Name)
		}
		if len(left) > 0 {
			return fmt.Errorf("%s:%d left behind %s: its clean-up steps must remove them", w.file, w.line, strings.Join(left, ", "))
		}
		return nil
	})
}

// TestDocsWalkthroughRules checks the walkthrough reader on small pages:
// what becomes a step, and what it refuses.
func TestDocsWalkthroughRules(t *testing.T) {
	page := "Intro\n```sh\nmake run\n```\n" + // outside a region: not run
		"<!-- walkthrough:begin hub -->\n" +
		"```sh\nexport A=1\nannexctl status\n```\n" +
		"```text\nhello   world\n\n…ready\n```\n" +
		"<!-- walkthrough:apply wait=Ready -->\n```yaml\nkind: X\n```\n" +
		"```yaml\nkind: NotApplied\n```\n" +
		"<!-- walkthrough:delete -->\n```yaml\nkind: X\n```\n" +
		"<!-- walkthrough:apply refused -->\n```yaml\nkind: Bad\n```\n```text\ndenied\n```\n" +
		"<!-- walkthrough:get -->\n```yaml\nkind: X\n```\n```text\nspec:\n```\n" +
		"<!-- walkthrough:end -->\n"
	ws, err := parseWalkthroughs("p.md", page)
	if err != nil {
		t.Fatal(err)
	}
	want := []walkStep{
		{kind: "run", line: 6, body: "export A=1\nannexctl status\n", want: []string{"hello   world", "…ready"}},
		{kind: "apply", line: 16, body: "kind: X\n", wait: "Ready"},
		{kind: "delete", line: 23, body: "kind: X\n"},
		{kind: "apply", line: 27, body: "kind: Bad\n", want: []string{"denied"}, refused: true},
		{kind: "get", line: 34, body: "kind: X\n", want: []string{"spec:"}},
	}
	if len(ws) != 1 || ws[0].env != "hub" || ws[0].line != 5 || !slices.EqualFunc(ws[0].steps, want, func(a, b walkStep) bool {
		return a.kind == b.kind && a.line == b.line && a.body == b.body && slices.Equal(a.want, b.want) && a.wait == b.wait && a.refused == b.refused
	}) {
		t.Errorf("parsed %+v, want one hub walkthrough at line 5 with steps %+v", ws, want)
	}

	refused := []struct{ name, page string }{
		{"a marker outside a region", "<!-- walkthrough:apply -->\n```yaml\nkind: X\n```\n"},
		{"apply followed by sh", "<!-- walkthrough:begin hub -->\n<!-- walkthrough:apply -->\n```sh\nls\n```\n<!-- walkthrough:end -->\n"},
		{"text first", "<!-- walkthrough:begin hub -->\n```text\nx\n```\n<!-- walkthrough:end -->\n"},
		{"unclosed", "<!-- walkthrough:begin hub -->\n```sh\nls\n```\n"},
		{"no sh block", "<!-- walkthrough:begin none -->\n<!-- walkthrough:end -->\n"},
		{"unknown environment", "<!-- walkthrough:begin moon -->\n```sh\nls\n```\n<!-- walkthrough:end -->\n"},
		{"a refusal without its text", "<!-- walkthrough:begin hub -->\n<!-- walkthrough:apply refused -->\n```yaml\nkind: X\n```\n```sh\nls\n```\n<!-- walkthrough:end -->\n"},
		{"a get without its text at the end", "<!-- walkthrough:begin hub -->\n```sh\nls\n```\n<!-- walkthrough:get -->\n```yaml\nkind: X\n```\n<!-- walkthrough:end -->\n"},
		{"a delete refused", "<!-- walkthrough:begin hub -->\n```sh\nls\n```\n<!-- walkthrough:delete refused -->\n```yaml\nkind: X\n```\n```text\nx\n```\n<!-- walkthrough:end -->\n"},
		{"a text after a plain apply", "<!-- walkthrough:begin hub -->\n```sh\nls\n```\n<!-- walkthrough:apply -->\n```yaml\nkind: X\n```\n```text\nx\n```\n<!-- walkthrough:end -->\n"},
	}
	for _, c := range refused {
		if _, err := parseWalkthroughs("p.md", c.page); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}

	out := "exit code 4\nNAME  READY  REASON\nmotd  False  ApprovalRequired: motd 1.0.0 → 2.0.0\n"
	matches := []struct {
		want []string
		ok   bool
	}{
		{[]string{"exit code 4", "motd False ApprovalRequired"}, true}, // in order, spaces loose
		{[]string{"ApprovalRequired", "1.0.0 → 2.0.0"}, true},          // two on one line
		{[]string{"motd … 2.0.0"}, true},                               // … matches anything
		{[]string{"ApprovalRequired", "exit code 4"}, false},           // out of order
		{[]string{"ApprovalDenied"}, false},                            // missing
		{[]string{"exit code 4 (*)"}, false},                           // regexp characters are literal
	}
	for _, m := range matches {
		if err := matchOutput(out, m.want); (err == nil) != m.ok {
			t.Errorf("matchOutput(%q) = %v, want ok=%v", m.want, err, m.ok)
		}
	}
}
