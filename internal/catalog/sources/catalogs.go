package sources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/directory"
	"github.com/annex-platform/annex/internal/catalog/helm"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/catalog/olm"
)

// Catalogs reads a Catalog's content from whichever source its spec names,
// remembers the last good content of each catalog (in memory and, with
// CacheDir, on disk) and serves it when the source cannot be read. It is
// safe for concurrent use; use it by pointer.
type Catalogs struct {
	Fetcher *catalog.Fetcher
	// Builtin returns the content of the catalog compiled into Annex.
	Builtin func(catalogName string) (*catalog.Index, error)
	// Lookup reads the Secrets named by spec.source.*.secretRef; nil means
	// a catalog with a secretRef cannot be read.
	Lookup catalog.CatalogLookup
	// CacheDir keeps each catalog's last good content across restarts;
	// empty means memory only.
	CacheDir string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// VerifyImage verifies an olm catalog's image (spec.source.olm.image)
	// under the catalog's signature policy before it is read, and returns
	// the image pinned to the digest it verified, which is what is read
	// (Verifier.VerifyCatalogImage); an error refuses the sync. Nil reads
	// images unverified.
	VerifyImage func(ctx context.Context, cat *v1alpha1.Catalog, image string) (string, error)

	mu    sync.Mutex
	state map[string]*lastGood
	oci   oci.Cache
}

// lastGood is a catalog's last successfully read content.
type lastGood struct {
	// Source identifies the spec it was read with; another spec starts afresh.
	Source       string         `json:"source"`
	ETag         string         `json:"etag,omitempty"`
	LastModified string         `json:"lastModified,omitempty"`
	FetchedAt    time.Time      `json:"fetchedAt"`
	Index        *catalog.Index `json:"index"`
}

// Index returns the parsed content of cat's source. When the source cannot
// be read but an earlier read of the same source succeeded, it returns that
// content with Index.Stale set to the error, and no error. An error means
// there is no content to serve: *catalog.FetchError and friends (retry),
// catalog.ErrSourceNotSupported for a source kind this build cannot read,
// or a plain error naming the field to fix.
func (s *Catalogs) Index(ctx context.Context, cat *v1alpha1.Catalog) (*catalog.Index, error) {
	src := cat.Spec.Source
	if src.Builtin != nil {
		return s.Builtin(cat.Name)
	}
	key := sourceKey(cat)
	if key == "" {
		return nil, catalog.ErrSourceNotSupported
	}
	prev := s.load(cat.Name, key)
	fresh, err := s.read(ctx, cat, prev)
	if err != nil {
		if prev == nil {
			return nil, err
		}
		stale := *prev.Index
		stale.FetchedAt, stale.Stale = prev.FetchedAt, err
		return &stale, nil
	}
	fresh.Source = key
	s.store(cat.Name, fresh)
	out := *fresh.Index
	out.FetchedAt = fresh.FetchedAt
	return &out, nil
}

// read fetches and parses the source; prev (maybe nil) allows a
// conditional request.
func (s *Catalogs) read(ctx context.Context, cat *v1alpha1.Catalog, prev *lastGood) (*lastGood, error) {
	var access *catalog.Access
	if hasSecretRef(cat.Spec.Source) {
		if s.Lookup == nil {
			return nil, fmt.Errorf("catalog %q: this manager cannot read Secrets for secretRef", cat.Name)
		}
		var err error
		if access, err = catalog.AccessFor(ctx, s.Lookup, cat); err != nil {
			return nil, err
		}
	}
	now := s.now()
	switch src := cat.Spec.Source; {
	case src.Helm != nil:
		req := helm.IndexRequest{RepoURL: src.Helm.URL, Access: access}
		if prev != nil {
			req.ETag, req.LastModified = prev.ETag, prev.LastModified
		}
		resp, err := helm.FetchIndexIfChanged(ctx, s.Fetcher, req)
		if err != nil {
			return nil, err
		}
		if resp.NotModified && prev != nil {
			return &lastGood{ETag: resp.ETag, LastModified: resp.LastModified, FetchedAt: now, Index: prev.Index}, nil
		}
		index, err := helm.ParseIndex(resp.Data, src.Helm.URL, cat.Name)
		if err != nil {
			return nil, fmt.Errorf("%s/index.yaml: %w", src.Helm.URL, err)
		}
		return &lastGood{ETag: resp.ETag, LastModified: resp.LastModified, FetchedAt: now, Index: index}, nil
	case src.OCI != nil:
		index, err := oci.Index(ctx, s.Fetcher, src.OCI.Repository, cat.Name, access, &s.oci)
		if err != nil {
			return nil, err
		}
		return &lastGood{FetchedAt: now, Index: index}, nil
	case src.Directory != nil:
		index, err := directory.Index(src.Directory.Path, cat.Name, s.Fetcher.EffectiveLimits())
		if err != nil {
			return nil, err
		}
		return &lastGood{FetchedAt: now, Index: index}, nil
	case src.OLM != nil:
		olmSrc := *src.OLM
		if olmSrc.Image != "" && s.VerifyImage != nil {
			pinned, err := s.VerifyImage(ctx, cat, olmSrc.Image)
			if err != nil {
				return nil, err
			}
			olmSrc.Image = pinned
		}
		index, err := olm.Index(ctx, s.Fetcher, &olmSrc, cat.Name, access)
		if err != nil {
			return nil, err
		}
		return &lastGood{FetchedAt: now, Index: index}, nil
	}
	return nil, catalog.ErrSourceNotSupported
}

// hasSecretRef reports whether the source names a credentials Secret.
func hasSecretRef(src v1alpha1.CatalogSource) bool {
	return src.Helm != nil && src.Helm.SecretRef != nil ||
		src.OCI != nil && src.OCI.SecretRef != nil ||
		src.OLM != nil && src.OLM.SecretRef != nil
}

// sourceKey identifies what a catalog reads, so that a changed spec does
// not serve the old source's content.
func sourceKey(cat *v1alpha1.Catalog) string {
	switch src := cat.Spec.Source; {
	case src.Helm != nil:
		return "helm " + src.Helm.URL
	case src.OCI != nil:
		return "oci " + src.OCI.Repository
	case src.Directory != nil:
		return "directory " + src.Directory.Path
	case src.OLM != nil:
		return "olm " + src.OLM.URL + src.OLM.Path + src.OLM.Image
	}
	return ""
}

func (s *Catalogs) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Forget drops what is remembered of a catalog, on disk too.
func (s *Catalogs) Forget(catalogName string) {
	s.mu.Lock()
	delete(s.state, catalogName)
	s.mu.Unlock()
	if p := s.diskPath(catalogName); p != "" {
		_ = os.Remove(p)
	}
}

func (s *Catalogs) load(catalogName, key string) *lastGood {
	s.mu.Lock()
	lg := s.state[catalogName]
	s.mu.Unlock()
	if lg == nil {
		lg = s.readDisk(catalogName)
	}
	if lg == nil || lg.Source != key || lg.Index == nil {
		return nil
	}
	return lg
}

func (s *Catalogs) store(catalogName string, lg *lastGood) {
	s.mu.Lock()
	if s.state == nil {
		s.state = map[string]*lastGood{}
	}
	s.state[catalogName] = lg
	s.mu.Unlock()
	s.writeDisk(catalogName, lg)
}

// diskPath is where a catalog's last good content is kept.
func (s *Catalogs) diskPath(catalogName string) string {
	if s.CacheDir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(catalogName))
	return filepath.Join(s.CacheDir, "indexes", hex.EncodeToString(sum[:16])+".json")
}

func (s *Catalogs) readDisk(catalogName string) *lastGood {
	p := s.diskPath(catalogName)
	if p == "" {
		return nil
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var lg lastGood
	if json.Unmarshal(raw, &lg) != nil {
		return nil // a damaged copy is as good as none
	}
	return &lg
}

// writeDisk keeps a copy; failing to is not an error for the sync, only a
// lost chance to serve it after a restart.
func (s *Catalogs) writeDisk(catalogName string, lg *lastGood) {
	p := s.diskPath(catalogName)
	if p == "" {
		return
	}
	raw, err := json.Marshal(lg)
	if err != nil {
		return
	}
	_ = catalog.WriteFileAtomic(p, raw)
}
