package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Fetcher is what every catalog source reads the outside world through:
// an HTTP client that adds a catalog's credentials for its host only, the
// size Limits, the lookup of Catalogs and their Secrets, and the archives
// compiled into Annex. The source packages (helm, oci, directory, olm)
// take a *Fetcher; package sources serves every artifact URL scheme with
// one. The zero value is usable for public URLs. It is safe for concurrent
// use.
type Fetcher struct {
	// Client sends the requests; nil means a client with a 60 s timeout. A
	// repository with credentials or its own CA gets a client derived from
	// it (same timeout) whose transport adds them for that host only.
	Client *http.Client
	// MaxIndexBytes and MaxArchiveBytes bound what one download may read;
	// zero means Limits, then DefaultMaxIndexBytes and DefaultMaxArchiveBytes.
	MaxIndexBytes, MaxArchiveBytes int64
	// Limits bound indexes and archives; every archive passes CheckArchive
	// with them before it is returned.
	Limits Limits
	// Lookup finds the Catalog named in an artifact's source and its
	// Secret, for credentials and directory roots. Nil means artifacts are
	// fetched anonymously and file:// URLs are refused.
	Lookup CatalogLookup
	// Builtin returns the archive of a built-in version (a chart, a
	// package or an operator bundle) and serves builtin://<name>/<version>
	// URLs. The program wires it to builtin.Archive (package builtin
	// imports this one, so this one cannot import it). Nil means
	// builtin:// URLs are refused.
	Builtin func(name, version string) ([]byte, error)

	clients clientCache
}

// FetchError means a download failed on the way: the server was unreachable,
// answered with a status other than 200, or the transfer broke. It is
// transient from Annex's point of view: retry with backoff.
type FetchError struct {
	// URL is the address requested, without credentials.
	URL string
	// StatusCode is the HTTP status when the server answered, else 0.
	StatusCode int
	// Err is the cause when the server did not answer, else nil.
	Err error
}

func (e *FetchError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("GET %s: server answered %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("GET %s: %v", e.URL, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// DigestMismatchError means an artifact's content is not the one the catalog
// indexed: the repository replaced the archive, or something altered it on
// the way. The artifact must not be used; resyncing the catalog picks up a
// deliberately replaced archive.
type DigestMismatchError struct {
	URL  string
	Want string
	Got  string
}

func (e *DigestMismatchError) Error() string {
	return fmt.Sprintf("artifact %s has digest %s, but the catalog recorded %s; the archive changed after it was indexed: resync the catalog if the change is intended", e.URL, e.Got, e.Want)
}

// Digests returns the digest the catalog recorded and the one the content
// has, so that callers can report both without importing this package.
func (e *DigestMismatchError) Digests() (want, got string) { return e.Want, e.Got }

// TooLargeError means a download exceeded the Fetcher's size limit. Retrying
// does not help; raise the limit or shrink the artifact.
type TooLargeError struct {
	URL   string
	Limit int64
}

// Permanent marks an artifact over the size limit as refused for good.
func (e *TooLargeError) Permanent() bool { return true }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("GET %s: larger than the limit of %d bytes (%.1f MiB); raise the fetcher's size limit or make the artifact smaller", e.URL, e.Limit, float64(e.Limit)/(1<<20))
}

// EffectiveLimits returns the Limits with every default filled in and
// MaxIndexBytes and MaxArchiveBytes overridden by the Fetcher's own fields
// when set.
func (f *Fetcher) EffectiveLimits() Limits {
	l := f.Limits.WithDefaults()
	l.MaxIndexBytes = limitOr(f.MaxIndexBytes, l.MaxIndexBytes)
	l.MaxArchiveBytes = limitOr(f.MaxArchiveBytes, l.MaxArchiveBytes)
	return l
}

// Get reads the body of a 200 answer to GET u, at most limit bytes, with
// the credentials of access when u is on access's host (see ClientFor). A
// 304 answer to a request with header is returned with no data and no
// error. Errors are *FetchError (retry), *TooLargeError, or a plain error
// for credentials that cannot be used.
func (f *Fetcher) Get(ctx context.Context, u *url.URL, access *Access, header http.Header, limit int64) ([]byte, *http.Response, error) {
	client, err := f.ClientFor(access, u)
	if err != nil {
		return nil, nil, err
	}
	shown := u.Redacted()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", shown, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, &FetchError{URL: shown, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && header != nil {
		return nil, resp, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, &FetchError{URL: shown, StatusCode: resp.StatusCode}
	}
	if resp.ContentLength > limit {
		return nil, nil, &TooLargeError{URL: shown, Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, &FetchError{URL: shown, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, nil, &TooLargeError{URL: shown, Limit: limit}
	}
	return data, resp, nil
}

// CatalogAccess returns the credentials of the named catalog, nil when it
// has none or the Fetcher has no Lookup.
func (f *Fetcher) CatalogAccess(ctx context.Context, catalogName string) (*Access, error) {
	if f.Lookup == nil || catalogName == "" {
		return nil, nil
	}
	cat, err := f.Lookup.Catalog(ctx, catalogName)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: %w", catalogName, err)
	}
	if cat == nil {
		return nil, nil
	}
	return AccessFor(ctx, f.Lookup, cat)
}

// FetchBuiltin serves builtin://<name>/<version> through Builtin, as it
// returns the archive: callers verify its digest and walk it with the
// archive checks. An error names the URL.
func (f *Fetcher) FetchBuiltin(u *url.URL) ([]byte, error) {
	name, version := u.Host, strings.TrimPrefix(u.Path, "/")
	if name == "" || version == "" || strings.Contains(version, "/") {
		return nil, fmt.Errorf("artifact URL %q: a built-in artifact URL is builtin://<name>/<version>", u.String())
	}
	if f.Builtin == nil {
		return nil, fmt.Errorf("artifact URL %q: this fetcher has no built-in catalog (Fetcher.Builtin is nil)", u.String())
	}
	data, err := f.Builtin(name, version)
	if err != nil {
		return nil, fmt.Errorf("artifact URL %q: %w", u.String(), err)
	}
	return data, nil
}

// VerifyDigest checks data against want, a "sha256:<hex>" digest, and
// returns a *DigestMismatchError naming shownURL when they differ, or a
// plain error for a digest of another algorithm.
func VerifyDigest(shownURL, want string, data []byte) error {
	hexWant, ok := strings.CutPrefix(want, "sha256:")
	if !ok {
		return fmt.Errorf("artifact %s: digest %q is not supported; use sha256:<hex>", shownURL, want)
	}
	got := Digest(data)
	if !strings.EqualFold(strings.TrimPrefix(got, "sha256:"), hexWant) {
		return &DigestMismatchError{URL: shownURL, Want: want, Got: got}
	}
	return nil
}

// Digest returns the "sha256:<hex>" digest of data, the form
// ArtifactSource.Digest and Index.Digest use.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func limitOr(limit, def int64) int64 {
	if limit > 0 {
		return limit
	}
	return def
}
