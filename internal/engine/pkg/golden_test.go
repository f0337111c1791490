package pkg

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update rewrites the golden files of this package's tests instead of
// comparing against them: go test ./internal/engine/pkg -update.
var update = flag.Bool("update", false, "rewrite golden files")

// checkGoldenFile compares got with the file at path (below testdata/),
// or rewrites it under -update.
func checkGoldenFile(t *testing.T, path string, got []byte) {
	t.Helper()
	path = filepath.Join("testdata", path)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/engine/pkg -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output; review and run with -update if the change is right.\n--- got\n%s", path, got)
	}
}
