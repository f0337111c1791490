package archive_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	"github.com/annex-platform/annex/internal/archive"
)

// untar is the tar stream inside a .tgz.
func untar(t *testing.T, tgz []byte) io.Reader {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

// TestWalk has one case per refusal of Walk and Entry.ReadAll, and
// checks that a walk within the limits sees every entry and body.
func TestWalk(t *testing.T) {
	lim := archive.Limits{MaxExpandedBytes: 4 << 10, MaxFileBytes: 1 << 10, MaxFiles: 3}
	readAll := func(e *archive.Entry) error { _, err := e.ReadAll(); return err }
	tests := []struct {
		name  string
		tar   io.Reader
		want  archive.Problem
		entry string
		size  int64
	}{
		{"too many entries", untar(t, tgz(t, file("a", ""), file("b", ""), file("c", ""), file("d", ""))), archive.TooManyEntries, "", 0},
		{"too expanded", untar(t, tgz(t, zeros("a", 1<<10), zeros("b", 1<<10), zeros("c", 1<<10))), archive.TooExpanded, "", 0},
		{"file too large", untar(t, tgz(t, zeros("big", 2<<10))), archive.FileTooLarge, "big", 2 << 10},
		{"not a tar", bytes.NewReader(bytes.Repeat([]byte("not a tar "), 100)), archive.NotTar, "", 0},
		{"truncated body", io.LimitReader(untar(t, tgz(t, zeros("a", 1<<10))), 700), archive.NotTar, "a", 0},
		{"the caller's cap", &archive.CappedReader{R: untar(t, tgz(t, zeros("a", 1<<10))), N: 600}, archive.TooExpanded, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := archive.Walk(tt.tar, lim, readAll)
			var e *archive.Error
			if !errors.As(err, &e) || e.Problem != tt.want || e.Entry != tt.entry || e.Size != tt.size {
				t.Fatalf("Walk() = %#v, want Problem %d, Entry %q, Size %d", err, tt.want, tt.entry, tt.size)
			}
		})
	}

	var seen []string
	err := archive.Walk(untar(t, tgz(t, file("a", "1"), file("b", ""))), archive.Limits{}, func(e *archive.Entry) error {
		data, err := e.ReadAll()
		if data == nil {
			t.Errorf("ReadAll of %s = nil, want an empty body", e.Header.Name)
		}
		seen = append(seen, e.Header.Name+"="+string(data))
		return err
	})
	if err != nil || len(seen) != 2 || seen[0] != "a=1" || seen[1] != "b=" {
		t.Fatalf("Walk() = %v, saw %q", err, seen)
	}
	stop := errors.New("stop")
	if err := archive.Walk(untar(t, tgz(t, file("a", ""))), archive.Limits{}, func(*archive.Entry) error { return stop }); err != stop {
		t.Fatalf("Walk() = %v, want the visitor's error as it is", err)
	}
}
