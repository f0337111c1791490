package helm

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/annex-platform/annex/internal/catalog"
)

// FetchIndex downloads <repoURL>/index.yaml anonymously. Errors are
// *catalog.FetchError (retry), *catalog.TooLargeError (above the index
// limit), or a plain error when repoURL is not an http(s) URL.
func FetchIndex(ctx context.Context, f *catalog.Fetcher, repoURL string) ([]byte, error) {
	resp, err := FetchIndexIfChanged(ctx, f, IndexRequest{RepoURL: repoURL})
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
	Access *catalog.Access
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

// FetchIndexIfChanged downloads <RepoURL>/index.yaml through f, at most
// f's index limit, unless the server says it has not changed since
// ETag/LastModified. Credentials in Access go to the repository's host
// only, never to a host a redirect points at. Errors are
// *catalog.FetchError (retry), *catalog.TooLargeError, or a plain error
// for a URL or Access that cannot be used (a person must fix the Catalog).
func FetchIndexIfChanged(ctx context.Context, f *catalog.Fetcher, req IndexRequest) (*IndexResponse, error) {
	u, err := url.Parse(req.RepoURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("repository URL %q: must be an http:// or https:// URL", req.RepoURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/index.yaml"
	u.RawPath = ""
	header := http.Header{}
	if req.ETag != "" {
		header.Set("If-None-Match", req.ETag)
	}
	if req.LastModified != "" {
		header.Set("If-Modified-Since", req.LastModified)
	}
	data, resp, err := f.Get(ctx, u, req.Access, header, f.EffectiveLimits().MaxIndexBytes)
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
