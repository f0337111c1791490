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

// Fetcher downloads Helm repository indexes and chart archives, from HTTP(S)
// repositories, OCI registries, directories and the built-in catalog. The
// zero value is usable for public http(s) URLs. It is safe for concurrent
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
	// Builtin returns the archive of a built-in chart version and serves
	// builtin://<name>/<version> URLs. The program wires it to
	// builtin.Archive (package builtin imports this one, so this one cannot
	// import it). Nil means builtin:// URLs are refused.
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

// FetchIndex downloads <repoURL>/index.yaml anonymously. Errors are
// *FetchError (retry), *TooLargeError (above MaxIndexBytes), or a plain
// error when repoURL is not an http(s) URL.
func (f *Fetcher) FetchIndex(ctx context.Context, repoURL string) ([]byte, error) {
	resp, err := f.FetchIndexIfChanged(ctx, IndexRequest{RepoURL: repoURL})
	if err != nil {
		return nil, err
	}
	return resp.Data, nil
}

// IndexRequest asks for a repository's index.yaml.
type IndexRequest struct {
	// RepoURL is the repository URL; index.yaml is read below it.
	RepoURL string
	// Access holds the repository's credentials; nil means anonymous.
	Access *Access
	// ETag and LastModified come from the previous answer; when set, the
	// server may answer 304 Not Modified.
	ETag, LastModified string
}

// IndexResponse is the answer to an IndexRequest.
type IndexResponse struct {
	// NotModified means the server answered 304: the previous data holds.
	NotModified bool
	// Data is the index when NotModified is false.
	Data []byte
	// ETag and LastModified are the validators to send next time.
	ETag, LastModified string
}

// FetchIndexIfChanged downloads <RepoURL>/index.yaml unless the server says
// it has not changed since ETag/LastModified. Credentials in Access go to
// the repository's host only, never to a host a redirect points at.
// Errors are *FetchError (retry), *TooLargeError, or a plain error for a
// URL or Access that cannot be used (a person must fix the Catalog).
func (f *Fetcher) FetchIndexIfChanged(ctx context.Context, req IndexRequest) (*IndexResponse, error) {
	u, err := url.Parse(req.RepoURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("repository URL %q: must be an http:// or https:// URL", req.RepoURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/index.yaml"
	u.RawPath = ""
	client, err := f.clientFor(req.Access, u)
	if err != nil {
		return nil, err
	}
	header := http.Header{}
	if req.ETag != "" {
		header.Set("If-None-Match", req.ETag)
	}
	if req.LastModified != "" {
		header.Set("If-Modified-Since", req.LastModified)
	}
	data, resp, err := get(ctx, client, u, header, f.indexLimit())
	if err != nil {
		return nil, err
	}
	out := &IndexResponse{Data: data, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}
	if resp.StatusCode == http.StatusNotModified {
		out.NotModified, out.Data = true, nil
		if out.ETag == "" {
			out.ETag = req.ETag
		}
		if out.LastModified == "" {
			out.LastModified = req.LastModified
		}
	}
	return out, nil
}

func (f *Fetcher) indexLimit() int64 {
	return limitOr(f.MaxIndexBytes, f.Limits.withDefaults().MaxIndexBytes)
}

func (f *Fetcher) limits() Limits {
	l := f.Limits.withDefaults()
	l.MaxArchiveBytes = limitOr(f.MaxArchiveBytes, l.MaxArchiveBytes)
	return l
}

// FetchArtifact downloads the archive src points at: http(s):// through
// Client (with the credentials of src.Catalog for its host), oci:// from a
// registry by digest, file:// from a directory catalog's folder, and
// builtin://<name>/<version> through Builtin. When src.Digest is set the
// content must have that digest; every archive passes CheckArchive.
// Errors are *FetchError (retry), *TooLargeError (above MaxArchiveBytes),
// *DigestMismatchError, *UnsafeArchiveError, or a plain error for a URL
// this Fetcher cannot serve.
func (f *Fetcher) FetchArtifact(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	u, err := url.Parse(src.URL)
	if err != nil {
		return nil, fmt.Errorf("artifact URL %q: %w", src.URL, err)
	}
	lim := f.limits()
	var data []byte
	switch u.Scheme {
	case "http", "https":
		var access *Access
		if access, err = f.catalogAccess(ctx, src.Catalog); err == nil {
			var client *http.Client
			if client, err = f.clientFor(access, u); err == nil {
				data, _, err = get(ctx, client, u, nil, lim.MaxArchiveBytes)
			}
		}
	case "oci":
		data, err = f.fetchOCI(ctx, src, lim)
	case "file":
		data, err = f.fetchFile(ctx, src, lim)
	case "builtin":
		data, err = f.builtin(u)
	default:
		return nil, fmt.Errorf("artifact URL %q: scheme %q is not supported; use http://, https://, oci://, file:// or builtin://", src.URL, u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	if src.Digest != "" {
		if err := verifyDigest(u.Redacted(), src.Digest, data); err != nil {
			return nil, err
		}
	}
	if err := CheckArchive(data, lim); err != nil {
		return nil, fmt.Errorf("artifact %s: %w", u.Redacted(), err)
	}
	return data, nil
}

// catalogAccess returns the credentials of the named catalog, nil when it
// has none or the Fetcher has no Lookup.
func (f *Fetcher) catalogAccess(ctx context.Context, catalogName string) (*Access, error) {
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

// get reads the body of a 200 answer to GET u, at most limit bytes. A 304
// answer is returned with no data and no error.
func get(ctx context.Context, client *http.Client, u *url.URL, header http.Header, limit int64) ([]byte, *http.Response, error) {
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
