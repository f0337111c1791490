package refdocs

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if err := Sync(path, []byte(got), *update); err != nil {
		want, _ := os.ReadFile(path)
		t.Errorf("%v\n--- got:\n%s\n--- want:\n%s", err, got, want)
	}
}

// The API page of a CRD that uses every kind of field and validation.
func TestAPI(t *testing.T) {
	crds, err := ReadCRDs("testdata/crds")
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 1 {
		t.Fatalf("read %d CRDs, want 1 (the kustomization is not one)", len(crds))
	}
	golden(t, "api.md", API(crds))
}

func TestReadCRDsEmpty(t *testing.T) {
	if _, err := ReadCRDs(t.TempDir()); err == nil {
		t.Error("a folder without CRDs gave no error")
	}
}

// The commands page of a small tree: a group, aliases, a required flag,
// a persistent flag, a hidden command and a hidden flag.
func TestCommands(t *testing.T) {
	root := &cobra.Command{Use: "tool", Short: "A tool", Long: "tool does things.\n\nExit codes:\n  0  fine\n  1  not fine"}
	root.PersistentFlags().String("config", "", "the `file` to read")
	group := &cobra.Command{Use: "thing", Short: "Work with things"}
	add := &cobra.Command{Use: "add NAME", Aliases: []string{"create", "new"}, Short: "Add a <thing>", Example: "  tool thing add x\n  tool thing add y --size 2",
		Run: func(*cobra.Command, []string) {}}
	add.Flags().IntP("size", "s", 1, "how big")
	add.Flags().Duration("wait", time.Minute, "how long | at most")
	add.Flags().StringArray("tag", nil, "a tag (repeatable)")
	add.Flags().String("owner", "", "who owns it")
	_ = add.MarkFlagRequired("owner")
	add.Flags().Bool("secret", false, "hidden")
	_ = add.Flags().MarkHidden("secret")
	hidden := &cobra.Command{Use: "debug", Hidden: true, Run: func(*cobra.Command, []string) {}}
	group.AddCommand(add)
	root.AddCommand(group, hidden)
	golden(t, "commands.md", Commands(root))
}

// The metrics table from a registry, in the order of the names given.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "x_seconds", Help: "How long x takes.", Buckets: []float64{0.5, 2}}, []string{"kind", "cluster"})
	counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "Xs done."})
	reg.MustRegister(hist, counter)
	hist.WithLabelValues("a", "hub").Observe(1)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Metrics(families, []string{"x_total", "x_seconds"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "metrics.md", got)
	// A metric without a series is not gathered: an error, not a gap.
	if _, err := Metrics(families, []string{"x_total", "y_total"}); err == nil {
		t.Error("a name without a family gave no error")
	}
}

func TestExitCodes(t *testing.T) {
	codes, err := ExitCodes("testdata/exitcodes", "Exit")
	if err != nil {
		t.Fatal(err)
	}
	want := []ExitCode{{"ExitOK", 0, "it worked."}, {"ExitRetry", 3, "try again\nlater."}}
	if len(codes) != len(want) {
		t.Fatalf("got %+v, want %+v", codes, want)
	}
	for i := range want {
		if codes[i] != want[i] {
			t.Errorf("code %d: got %+v, want %+v", i, codes[i], want[i])
		}
	}
	if got := ExitCodesTable(codes); got != "| Code | Meaning |\n| --- | --- |\n| 0 | it worked. |\n| 3 | try again later. |\n\n" {
		t.Errorf("table:\n%s", got)
	}
	if _, err := ExitCodes("testdata/exitcodes", "Missing"); err == nil {
		t.Error("no constant with the prefix gave no error")
	}
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"annexctl catalog add", "annexctl-catalog-add"}, // spaces become dashes
		{"Widget printer columns", "widget-printer-columns"},
		{"annex reference: the manager", "annex-reference-the-manager"}, // punctuation dropped
		{"x_y-z", "x_y-z"}, // '_' and '-' kept
	} {
		if got := Slug(c.heading); got != c.want {
			t.Errorf("Slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

func TestInline(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\n  b", "a b"},                                // one line
		{"a | b <c>", `a \| b &lt;c&gt;`},                // table and HTML characters
		{"run `a | b <c>` now", "run `a \\| b <c>` now"}, // code spans keep < and >
		{"x_y *z*", `x\_y \*z\*`},                        // no emphasis
		{"# not a heading", `\# not a heading`},          // no heading
		{"an ` alone", "an ` alone"},                     // an unpaired backquote is text
	} {
		if got := Inline(c.in); got != c.want {
			t.Errorf("Inline(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCode(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},                            // nothing, not an empty span
		{"a || b", "`a \\|\\| b`"},          // '|' escaped for tables
		{"has(x) &&\n  y", "`has(x) && y`"}, // a rule written on two lines stays in its row
		{"^a  b$", "`^a  b$`"},              // spaces within a line kept
		{"a`b", "``a`b``"},                  // a longer fence around a backquote
		{"`a", "`` `a ``"},                  // padded when it starts with one
	} {
		if got := Code(c.in); got != c.want {
			t.Errorf("Code(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestProse(t *testing.T) {
	in := "first line\nsecond line.\n\nList:\n  a  one\n    more\n  b  two\nafter\n"
	want := "first line second line.\n\nList:\n\n```text\na  one\n  more\nb  two\n```\n\nafter\n\n"
	if got := Prose(in); got != want {
		t.Errorf("Prose:\n%q\nwant\n%q", got, want)
	}
}

func TestSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "page.md")
	if err := Sync(path, []byte("a"), false); err == nil {
		t.Error("a missing page is not stale")
	}
	if err := Sync(path, []byte("a"), true); err != nil {
		t.Fatal(err)
	}
	if err := Sync(path, []byte("a"), false); err != nil {
		t.Errorf("the page as written is stale: %v", err)
	}
	if err := Sync(path, []byte("b"), false); err == nil {
		t.Error("a changed page is not stale")
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, []byte("a")) {
		t.Errorf("a check wrote the page: %q", got)
	}
}
