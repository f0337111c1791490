// Package archive is archive safety for every reader of tar archives in
// Annex: the catalog, the Helm engine (internal/engine/helm) and the package
// and bundle engines. It owns the size-capped reader, entry-name cleaning,
// the per-entry checks and the one tar walker (Walk); CheckArchive and
// CheckBundleArchive are the whole-archive checks a chart, package or
// bundle archive passes before anything else reads it. It is pure: bytes
// or a reader in, entries or a refusal out.
//
// Each reader keeps its own wording: Walk and CheckName report a Problem,
// which the engines phrase in their errors; CheckArchive phrases them as
// the catalog always has (*UnsafeArchiveError).
package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrLimitReached is what a CappedReader returns once more than its limit
// was read: decompression or a stream stops at the size limit.
var ErrLimitReached = errors.New("expanded size limit reached")

// CappedReader reads R and fails with ErrLimitReached once more than N
// bytes were read. N counts down as bytes are read: what is left of the
// limit, below zero once it was passed.
type CappedReader struct {
	R io.Reader
	N int64
}

func (c *CappedReader) Read(p []byte) (int, error) {
	if c.N < 0 {
		return 0, ErrLimitReached
	}
	if int64(len(p)) > c.N+1 {
		p = p[:c.N+1]
	}
	n, err := c.R.Read(p)
	c.N -= int64(n)
	if c.N < 0 {
		return n, ErrLimitReached
	}
	return n, err
}

// TrimDotSlash strips leading "./" from an archive entry name, as
// `tar -C dir .` writes them.
func TrimDotSlash(name string) string {
	for strings.HasPrefix(name, "./") {
		name = name[2:]
	}
	return name
}

// Problem is why an archive or one of its entries is refused. Walk,
// Entry.ReadAll and CheckName report it in an *Error; each reader words
// it for its users.
type Problem int

// The problems, in the order CheckName and CheckEntryName test names.
const (
	// EmptyName: the entry has no name (or only "./").
	EmptyName Problem = iota + 1
	// AbsolutePath: the name starts with "/".
	AbsolutePath
	// Backslash: the name holds a backslash, a separator on Windows.
	Backslash
	// DriveLetter: the name starts with a drive letter ("C:"); only
	// CheckEntryName refuses it.
	DriveLetter
	// ControlCharacters: the name holds control characters.
	ControlCharacters
	// ParentPath: a segment of the name is "..".
	ParentPath
	// UncleanPath: the name has empty or "." segments, or is otherwise
	// not what path.Clean makes of it.
	UncleanPath
	// SymbolicLink, HardLink and SpecialFile: the entry is not a regular
	// file or a folder (CheckType).
	SymbolicLink
	HardLink
	SpecialFile
	// TooManyEntries: the archive has more than Limits.MaxFiles entries.
	TooManyEntries
	// TooExpanded: the stream is longer than Limits.MaxExpandedBytes.
	TooExpanded
	// FileTooLarge: a file is longer than Limits.MaxFileBytes.
	FileTooLarge
	// NotTar: the bytes are not a valid tar stream (Err says why).
	NotTar
)

// Error is a refusal by Walk, an Entry or CheckName. Its message is plain;
// readers word it for their users from Problem and the fields.
type Error struct {
	Problem Problem
	// Entry is the entry's name as written in the archive; empty when the
	// archive as a whole is at fault.
	Entry string
	// Size is a FileTooLarge file's size from its tar header; zero when
	// the header understated it and the body ran past the limit.
	Size int64
	// Err is the tar reader's error for NotTar.
	Err error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("archive problem %d", e.Problem)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Entry != "" {
		return fmt.Sprintf("entry %q: %s", e.Entry, msg)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Limits bound what Walk reads. A zero field bounds nothing: Walk takes
// them as they are (CheckArchive sets its defaults first, see
// WithDefaults).
type Limits struct {
	// MaxArchiveBytes bounds an archive as downloaded, compressed
	// (CheckArchive; Walk never sees the compressed bytes).
	MaxArchiveBytes int64
	// MaxExpandedBytes bounds the tar stream, headers included.
	MaxExpandedBytes int64
	// MaxFileBytes bounds one file (Entry.ReadAll, Entry.Discard).
	MaxFileBytes int64
	// MaxFiles bounds the entries, folders included.
	MaxFiles int
}

// Walk reads the tar stream r (already decompressed) entry by entry and
// calls visit with each, in archive order, until the end of the tar, an
// error of the stream or of visit. It refuses, with an *Error: more than
// lim.MaxFiles entries (TooManyEntries, before visit sees the entry past
// the limit), a stream longer than lim.MaxExpandedBytes (TooExpanded; also
// when r is a CappedReader of the caller's that reaches its limit), and
// bytes that are not a tar (NotTar). It checks no names or types: visit
// does, with CheckName (or CheckEntryName) and CheckType, in the order its
// reader words its refusals; it reads a file with Entry.ReadAll, which
// bounds it by lim.MaxFileBytes. Walk stops at the end of the tar; what
// follows it is not read. An error visit returns is returned as it is.
func Walk(r io.Reader, lim Limits, visit func(*Entry) error) error {
	capped := &CappedReader{R: r, N: lim.MaxExpandedBytes}
	if lim.MaxExpandedBytes <= 0 {
		capped.N = 1<<63 - 2
	}
	tr := tar.NewReader(capped)
	for entries := 0; ; entries++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return streamError(capped, "", err)
		}
		if lim.MaxFiles > 0 && entries >= lim.MaxFiles {
			return &Error{Problem: TooManyEntries}
		}
		if err := visit(&Entry{Header: hdr, tar: tr, capped: capped, maxFileBytes: lim.MaxFileBytes}); err != nil {
			return err
		}
	}
}

// streamError is TooExpanded when the stream passed its limit (the
// walker's or a CappedReader the caller gave), else NotTar.
func streamError(capped *CappedReader, entry string, err error) error {
	if capped.N < 0 || errors.Is(err, ErrLimitReached) {
		return &Error{Problem: TooExpanded}
	}
	return &Error{Problem: NotTar, Entry: entry, Err: err}
}

// NotValidTar words a NotTar *Error as "<what> is not a valid tar:
// [entry: ]reason", for a walk of an archive that was checked before,
// where only a broken tar can fail; other errors pass as they are.
func NotValidTar(what string, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Problem != NotTar {
		return err
	}
	if e.Entry != "" {
		return fmt.Errorf("%s is not a valid tar: %s: %w", what, e.Entry, e.Err)
	}
	return fmt.Errorf("%s is not a valid tar: %w", what, e.Err)
}

// Entry is one entry of the archive Walk reads, valid until visit
// returns.
type Entry struct {
	// Header is the entry's tar header as written: its Name is not
	// cleaned (TrimDotSlash, CheckName).
	Header       *tar.Header
	tar          *tar.Reader
	capped       *CappedReader
	maxFileBytes int64
}

// Read reads the entry's body as it is, bounded only by the stream's
// limit (a caller that bounds files itself, or streams them).
func (e *Entry) Read(p []byte) (int, error) { return e.tar.Read(p) }

// ReadAll returns the entry's body. It refuses, with an *Error, a body
// longer than Limits.MaxFileBytes (FileTooLarge: by the header's size
// before reading, by the bytes read after), a stream past its limit
// (TooExpanded) and a broken tar (NotTar naming the entry).
func (e *Entry) ReadAll() ([]byte, error) {
	body, err := e.body()
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, streamError(e.capped, e.Header.Name, err)
	}
	if e.maxFileBytes > 0 && int64(len(data)) > e.maxFileBytes {
		return nil, &Error{Problem: FileTooLarge, Entry: e.Header.Name}
	}
	return data, nil
}

// Discard reads the entry's body and drops it, with the refusals of
// ReadAll: checking an archive reads every byte of it.
func (e *Entry) Discard() error {
	body, err := e.body()
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, body)
	if err != nil {
		return streamError(e.capped, e.Header.Name, err)
	}
	if e.maxFileBytes > 0 && n > e.maxFileBytes {
		return &Error{Problem: FileTooLarge, Entry: e.Header.Name}
	}
	return nil
}

// body is the entry's body, bounded to one byte past MaxFileBytes; it
// refuses a header announcing more.
func (e *Entry) body() (io.Reader, error) {
	if e.maxFileBytes <= 0 {
		return e.tar, nil
	}
	if e.Header.Size > e.maxFileBytes {
		return nil, &Error{Problem: FileTooLarge, Entry: e.Header.Name, Size: e.Header.Size}
	}
	return io.LimitReader(e.tar, e.maxFileBytes+1), nil
}

// CheckType reports a tar entry that is not a regular file or a folder:
// SymbolicLink, HardLink, or SpecialFile (devices, FIFOs, and any other
// tar type, pax global headers included); zero for a file or a folder.
func CheckType(hdr *tar.Header) Problem {
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
		return 0
	case tar.TypeSymlink:
		return SymbolicLink
	case tar.TypeLink:
		return HardLink
	}
	return SpecialFile
}
