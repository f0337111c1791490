package sources_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/helm"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// fetchArtifact fetches src through f as an installation does.
func fetchArtifact(ctx context.Context, f *catalog.Fetcher, src v1alpha1.ArtifactSource) ([]byte, error) {
	return sources.Artifacts{Fetcher: f}.FetchArtifact(ctx, src)
}

var demoChart = helmrepo.Chart{
	Name:        "demo",
	Version:     "1.2.3",
	AppVersion:  "4.5",
	KubeVersion: ">=1.28.0-0",
	Description: "a demo chart",
	Annotations: map[string]string{v1alpha1.AnnotationDependencies: "- name: base\n  version: ^1.0.0\n"},
	Files: map[string]string{
		"values.yaml":       "message: hi\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  message: {{ .Values.message }}\n",
	},
}

// TestFetchIndexAndArtifact walks the path a catalog sync and an install
// take: fetch the index, parse it, fetch the archive it points at.
func TestFetchIndexAndArtifact(t *testing.T) {
	repo := helmrepo.NewServer(t, demoChart)
	f := &catalog.Fetcher{}
	ctx := context.Background()

	data, err := helm.FetchIndex(ctx, f, repo.URL()+"/")
	if err != nil {
		t.Fatalf("FetchIndex: %v", err)
	}
	index, err := helm.ParseIndex(data, repo.URL(), "test")
	if err != nil {
		t.Fatalf("ParseIndex: %v", err)
	}
	if len(index.Packages) != 1 || len(index.Packages[0].Spec.Versions) != 1 || len(index.Skipped) != 0 {
		t.Fatalf("index = %s", catalogtest.Dump(index))
	}
	v := index.Packages[0].Spec.Versions[0]
	want, err := helmrepo.Archive(demoChart)
	if err != nil {
		t.Fatal(err)
	}
	if wantURL := repo.URL() + "/demo-1.2.3.tgz"; v.Source.URL != wantURL {
		t.Errorf("Source.URL = %q, want %q", v.Source.URL, wantURL)
	}
	if v.Source.Digest != catalog.Digest(want) {
		t.Errorf("Source.Digest = %q, want %q", v.Source.Digest, catalog.Digest(want))
	}
	if len(v.Dependencies) != 1 || v.Dependencies[0] != (v1alpha1.Dependency{Name: "base", Version: "^1.0.0"}) {
		t.Errorf("Dependencies = %v", v.Dependencies)
	}

	got, err := fetchArtifact(ctx, f, v.Source)
	if err != nil {
		t.Fatalf("FetchArtifact: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("FetchArtifact returned %d bytes that differ from the served archive (%d bytes)", len(got), len(want))
	}
	if n := repo.Requests("/index.yaml"); n != 1 {
		t.Errorf("index.yaml was requested %d times, want 1", n)
	}
}

func TestFetchErrors(t *testing.T) {
	repo := helmrepo.NewServer(t, demoChart)
	archive, err := helmrepo.Archive(demoChart)
	if err != nil {
		t.Fatal(err)
	}
	artifactURL := repo.URL() + "/demo-1.2.3.tgz"
	otherDigest := catalog.Digest([]byte("something else"))

	tests := []struct {
		name  string
		fetch func(*catalog.Fetcher) error
		down  bool
		check func(t *testing.T, err error)
	}{
		{
			// The archive is not the one the catalog recorded.
			name: "digest mismatch",
			fetch: func(f *catalog.Fetcher) error {
				_, err := fetchArtifact(context.Background(), f, v1alpha1.ArtifactSource{URL: artifactURL, Digest: otherDigest})
				return err
			},
			check: func(t *testing.T, err error) {
				var mismatch *catalog.DigestMismatchError
				if !errors.As(err, &mismatch) {
					t.Fatalf("error = %v, want a *DigestMismatchError", err)
				}
				want := catalog.DigestMismatchError{URL: artifactURL, Want: otherDigest, Got: catalog.Digest(archive)}
				if *mismatch != want {
					t.Errorf("error = %+v, want %+v", *mismatch, want)
				}
			},
		},
		{
			// An archive above MaxArchiveBytes is refused, naming the limit.
			name: "archive too large",
			fetch: func(f *catalog.Fetcher) error {
				f.MaxArchiveBytes = 64
				_, err := fetchArtifact(context.Background(), f, v1alpha1.ArtifactSource{URL: artifactURL})
				return err
			},
			check: func(t *testing.T, err error) {
				var tooLarge *catalog.TooLargeError
				if !errors.As(err, &tooLarge) || tooLarge.Limit != 64 || !strings.Contains(err.Error(), "64 bytes") {
					t.Fatalf("error = %v, want a *TooLargeError naming the limit of 64 bytes", err)
				}
			},
		},
		{
			// An index above MaxIndexBytes is refused the same way.
			name: "index too large",
			fetch: func(f *catalog.Fetcher) error {
				f.MaxIndexBytes = 10
				_, err := helm.FetchIndex(context.Background(), f, repo.URL())
				return err
			},
			check: func(t *testing.T, err error) {
				var tooLarge *catalog.TooLargeError
				if !errors.As(err, &tooLarge) || tooLarge.Limit != 10 {
					t.Fatalf("error = %v, want a *TooLargeError with limit 10", err)
				}
			},
		},
		{
			// A repository answering 503 gives a retryable FetchError.
			name: "repository down",
			down: true,
			fetch: func(f *catalog.Fetcher) error {
				_, err := helm.FetchIndex(context.Background(), f, repo.URL())
				return err
			},
			check: func(t *testing.T, err error) {
				var fetchErr *catalog.FetchError
				if !errors.As(err, &fetchErr) || fetchErr.StatusCode != http.StatusServiceUnavailable || fetchErr.URL != repo.URL()+"/index.yaml" {
					t.Fatalf("error = %v, want a *FetchError with status 503 for %s/index.yaml", err, repo.URL())
				}
			},
		},
		{
			// A missing archive is a FetchError with the status.
			name: "archive not found",
			fetch: func(f *catalog.Fetcher) error {
				_, err := fetchArtifact(context.Background(), f, v1alpha1.ArtifactSource{URL: repo.URL() + "/missing-1.0.0.tgz"})
				return err
			},
			check: func(t *testing.T, err error) {
				var fetchErr *catalog.FetchError
				if !errors.As(err, &fetchErr) || fetchErr.StatusCode != http.StatusNotFound {
					t.Fatalf("error = %v, want a *FetchError with status 404", err)
				}
			},
		},
		{
			// A cancelled context is a FetchError that still unwraps to the cause.
			name: "context cancelled",
			fetch: func(f *catalog.Fetcher) error {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_, err := helm.FetchIndex(ctx, f, repo.URL())
				return err
			},
			check: func(t *testing.T, err error) {
				var fetchErr *catalog.FetchError
				if !errors.As(err, &fetchErr) || !errors.Is(err, context.Canceled) {
					t.Fatalf("error = %v, want a *FetchError wrapping context.Canceled", err)
				}
			},
		},
		{
			// Credentials in a URL never appear in an error.
			name: "credentials redacted",
			fetch: func(f *catalog.Fetcher) error {
				_, err := fetchArtifact(context.Background(), f, v1alpha1.ArtifactSource{URL: strings.Replace(repo.URL(), "://", "://user:secret@", 1) + "/missing.tgz"})
				return err
			},
			check: func(t *testing.T, err error) {
				if err == nil || strings.Contains(err.Error(), "secret") {
					t.Fatalf("error = %v, want one without the password", err)
				}
			},
		},
		{
			// Schemes the fetcher cannot serve are refused up front.
			name: "unsupported scheme",
			fetch: func(f *catalog.Fetcher) error {
				_, err := fetchArtifact(context.Background(), f, v1alpha1.ArtifactSource{URL: "ftp://registry.example.com/charts/demo-1.2.3.tgz"})
				return err
			},
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), `scheme "ftp" is not supported`) {
					t.Fatalf("error = %v, want unsupported scheme", err)
				}
			},
		},
		{
			// A repository URL must be http(s).
			name: "bad repository url",
			fetch: func(f *catalog.Fetcher) error {
				_, err := helm.FetchIndex(context.Background(), f, "ftp://example.com/charts")
				return err
			},
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), "must be an http:// or https:// URL") {
					t.Fatalf("error = %v, want a refused repository URL", err)
				}
			},
		},
		{
			// builtin:// needs Fetcher.Builtin.
			name: "builtin without builtin catalog",
			fetch: func(f *catalog.Fetcher) error {
				_, err := fetchArtifact(context.Background(), f, v1alpha1.ArtifactSource{URL: "builtin://hello/0.1.0"})
				return err
			},
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), "Fetcher.Builtin is nil") {
					t.Fatalf("error = %v, want one naming Fetcher.Builtin", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo.SetDown(tt.down)
			defer repo.SetDown(false)
			tt.check(t, tt.fetch(&catalog.Fetcher{}))
		})
	}
}

// TestFetchBuiltin checks that builtin://<name>/<version> reaches
// Fetcher.Builtin with the name and version, and that the digest is checked.
func TestFetchBuiltin(t *testing.T) {
	content, err := catalog.ChartArchive("hello", map[string][]byte{"Chart.yaml": []byte("apiVersion: v2\nname: hello\nversion: 0.1.0\n")})
	if err != nil {
		t.Fatal(err)
	}
	var gotName, gotVersion string
	f := &catalog.Fetcher{Builtin: func(name, version string) ([]byte, error) {
		gotName, gotVersion = name, version
		return content, nil
	}}
	src := v1alpha1.ArtifactSource{URL: "builtin://hello/0.1.0", Digest: catalog.Digest(content)}
	got, err := fetchArtifact(context.Background(), f, src)
	if err != nil {
		t.Fatalf("FetchArtifact: %v", err)
	}
	if !bytes.Equal(got, content) || gotName != "hello" || gotVersion != "0.1.0" {
		t.Fatalf("got %q from Builtin(%q, %q)", got, gotName, gotVersion)
	}

	src.Digest = catalog.Digest([]byte("other"))
	var mismatch *catalog.DigestMismatchError
	if _, err := fetchArtifact(context.Background(), f, src); !errors.As(err, &mismatch) {
		t.Fatalf("error = %v, want a *DigestMismatchError", err)
	}
}
