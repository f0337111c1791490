package main

import (
	"flag"
	"strconv"
	"strings"
	"testing"

	"github.com/annex-platform/annex/hack/refdocs"
)

var update = flag.Bool("update", false, "write docs/reference/annexctl.md instead of comparing it")

// TestReference keeps docs/reference/annexctl.md what the command tree
// and internal/cli's exit codes make of it; `make generate` runs it with
// -update to write the page.
func TestReference(t *testing.T) {
	codes, err := refdocs.ExitCodes("../../internal/cli", "Exit")
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCommand("annexctl")
	root.InitDefaultCompletionCmd()
	// The exit codes the help lists are those the code declares.
	for _, c := range codes {
		if !strings.Contains(root.Long, "\n  "+strconv.Itoa(c.Code)+"  ") {
			t.Errorf("annexctl --help does not list exit code %d (cli.%s)", c.Code, c.Name)
		}
	}
	page := refdocs.Generated("the reference test of cmd/annexctl (go test ./cmd/annexctl -run TestReference -update)") +
		"# annexctl reference\n\n" +
		"Every command of `annexctl`, with its flags and their defaults, generated from its command tree. " +
		"Installed as `kubectl-annex` on PATH, the same binary is the kubectl plugin `kubectl annex`, with the same commands.\n\n" +
		"## Exit codes\n\n" +
		"Scripts can branch on them (constants `Exit*` of `internal/cli`).\n\n" +
		refdocs.ExitCodesTable(codes) +
		"## Commands\n\n" +
		refdocs.Commands(root)
	if err := refdocs.Sync("../../docs/reference/annexctl.md", []byte(page), *update); err != nil {
		t.Fatal(err)
	}
}
