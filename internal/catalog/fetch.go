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

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Default size limits of a Fetcher whose limits are zero.
const (
	DefaultMaxIndexBytes   int64 = 50 << 20
	DefaultMaxArchiveBytes int64 = 10 << 20
)

// Fetcher downloads Helm repository indexes and chart archives. The zero
// value is usable for http(s) URLs.
type Fetcher struct {
	// Client sends the requests; nil means http.DefaultClient. Credentials
	// and TLS settings of a repository belong in its transport.
	Client *http.Client
	// MaxIndexBytes and MaxArchiveBytes bound what one download may read;
	// zero means DefaultMaxIndexBytes and DefaultMaxArchiveBytes.
	MaxIndexBytes, MaxArchiveBytes int64
	// Builtin returns the archive of a built-in chart version and serves
	// builtin://<name>/<version> URLs. The program wires it to
	// builtin.Archive (package builtin imports this one, so this one cannot
	// import it). Nil means builtin:// URLs are refused.
	Builtin func(name, version string) ([]byte, error)
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

// TooLargeError means a download exceeded the Fetcher's size limit. Retrying
// does not help; raise the limit or shrink the artifact.
type TooLargeError struct {
	URL   string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("GET %s: larger than the limit of %d bytes (%.1f MiB); raise the fetcher's size limit or make the artifact smaller", e.URL, e.Limit, float64(e.Limit)/(1<<20))
}

// FetchIndex downloads <repoURL>/index.yaml. Errors are *FetchError
// (retry), *TooLargeError (above MaxIndexBytes), or a plain error when
// repoURL is not an http(s) URL.
func (f *Fetcher) FetchIndex(ctx context.Context, repoURL string) ([]byte, error) {
	u, err := url.Parse(repoURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("repository URL %q: must be an http:// or https:// URL", repoURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/index.yaml"
	u.RawPath = ""
	return f.get(ctx, u, limitOr(f.MaxIndexBytes, DefaultMaxIndexBytes))
}

// FetchArtifact downloads the archive src points at: http(s):// through
// Client, builtin://<name>/<version> through Builtin. When src.Digest is set
// the content must have that digest. Errors are *FetchError (retry),
// *TooLargeError (above MaxArchiveBytes), *DigestMismatchError, or a plain
// error for a URL this Fetcher cannot serve.
func (f *Fetcher) FetchArtifact(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	u, err := url.Parse(src.URL)
	if err != nil {
		return nil, fmt.Errorf("artifact URL %q: %w", src.URL, err)
	}
	var data []byte
	switch u.Scheme {
	case "http", "https":
		data, err = f.get(ctx, u, limitOr(f.MaxArchiveBytes, DefaultMaxArchiveBytes))
	case "builtin":
		data, err = f.builtin(u)
	default:
		return nil, fmt.Errorf("artifact URL %q: scheme %q is not supported; use http://, https:// or builtin://", src.URL, u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	if src.Digest != "" {
		if err := verifyDigest(u.Redacted(), src.Digest, data); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// builtin serves builtin://<name>/<version>.
func (f *Fetcher) builtin(u *url.URL) ([]byte, error) {
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

// get reads the body of a 200 answer to GET u, at most limit bytes.
func (f *Fetcher) get(ctx context.Context, u *url.URL, limit int64) ([]byte, error) {
	shown := u.Redacted()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", shown, err)
	}
	client := f.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, &FetchError{URL: shown, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &FetchError{URL: shown, StatusCode: resp.StatusCode}
	}
	if resp.ContentLength > limit {
		return nil, &TooLargeError{URL: shown, Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, &FetchError{URL: shown, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{URL: shown, Limit: limit}
	}
	return data, nil
}

// verifyDigest checks data against want, a "sha256:<hex>" digest.
func verifyDigest(shownURL, want string, data []byte) error {
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
