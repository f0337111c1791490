package directory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/helm"
)

// Index reads a folder of charts and packages: every sub-folder holding a
// Chart.yaml is packed as a chart, every sub-folder holding an
// operator.yaml is packed as a package (catalog.PackageArchive; engine
// Package, with the version, kubeVersion and extends its operator.yaml
// gives, see "Packages in a repository index" in package helm), both with
// URL file://<folder>; every regular *.tgz file is a packed chart or
// package (URL file://<file>). Symbolic links, other files and archives
// that break lim are skipped and counted. The folder must be absolute; an
// error names spec.source.directory.path.
func Index(root, catalogName string, lim catalog.Limits) (*catalog.Index, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("spec.source.directory.path %q: must be an absolute path", root)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("spec.source.directory.path %q: %w", root, err)
	}
	items, err := os.ReadDir(real)
	if err != nil {
		return nil, fmt.Errorf("spec.source.directory.path %q: %w", root, err)
	}
	lim = lim.WithDefaults()
	entries := map[string][]map[string]any{}
	var skipped []string
	for _, it := range items {
		p := filepath.Join(real, it.Name())
		var data []byte
		switch {
		case it.Type()&fs.ModeSymlink != 0:
			skipped = append(skipped, fmt.Sprintf("%s: is a symbolic link; a directory catalog reads regular files and folders only", it.Name()))
			continue
		case it.IsDir():
			if folderKind(p) == "" {
				continue
			}
			data, err = packDir(p, lim)
		case it.Type().IsRegular() && strings.HasSuffix(it.Name(), ".tgz"):
			data, err = readFileLimited(p, lim.MaxArchiveBytes)
		default:
			continue
		}
		var md map[string]any
		if err == nil {
			if err = catalog.CheckArchive(data, lim); err == nil {
				md, err = helm.ArchiveEntry(data)
			}
		}
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", it.Name(), err))
			continue
		}
		chartName, _ := md["name"].(string)
		if chartName == "" {
			skipped = append(skipped, fmt.Sprintf("%s: has no name", it.Name()))
			continue
		}
		entry := make(map[string]any, len(md)+2)
		for k, v := range md {
			entry[k] = v
		}
		entry["urls"] = []string{(&url.URL{Scheme: "file", Path: p}).String()}
		entry["digest"] = strings.TrimPrefix(catalog.Digest(data), "sha256:")
		entries[chartName] = append(entries[chartName], entry)
	}
	index, err := helm.IndexFromEntries(entries, "file://"+real, catalogName)
	if err != nil {
		return nil, err
	}
	sort.Strings(skipped)
	index.Skipped = append(skipped, index.Skipped...)
	return index, nil
}

// FetchArtifact serves file:// URLs of a directory catalog, and only paths
// inside that catalog's folder (after resolving symbolic links): a folder
// packed as Index packs it, or a file as it is, at most
// lim.MaxArchiveBytes. lookup finds src.Catalog; nil refuses every URL.
// The caller verifies src.Digest and walks the archive with
// catalog.CheckArchive. Errors are *catalog.FetchError (the path cannot be
// read now), *catalog.TooLargeError, *catalog.UnsafeArchiveError, or a
// plain error naming the URL or the catalog.
func FetchArtifact(ctx context.Context, lookup catalog.CatalogLookup, src v1alpha1.ArtifactSource, lim catalog.Limits) ([]byte, error) {
	u, err := url.Parse(src.URL)
	if err != nil || u.Host != "" || !filepath.IsAbs(u.Path) {
		return nil, fmt.Errorf("artifact URL %q: a file artifact URL is file:///<absolute path>", src.URL)
	}
	if lookup == nil {
		return nil, fmt.Errorf("artifact URL %q: this fetcher cannot look up catalog %q to check the path", src.URL, src.Catalog)
	}
	lim = lim.WithDefaults()
	cat, err := lookup.Catalog(ctx, src.Catalog)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: %w", src.Catalog, err)
	}
	if cat == nil || cat.Spec.Source.Directory == nil {
		return nil, fmt.Errorf("artifact URL %q: file:// artifacts are served only for a directory catalog, and catalog %q is not one", src.URL, src.Catalog)
	}
	root, err := filepath.EvalSymlinks(cat.Spec.Source.Directory.Path)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: spec.source.directory.path: %w", src.Catalog, err)
	}
	target, err := filepath.EvalSymlinks(u.Path)
	if err != nil {
		return nil, &catalog.FetchError{URL: src.URL, Err: err}
	}
	rel, err := filepath.Rel(root, target)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return nil, fmt.Errorf("artifact URL %q is outside the folder %s of catalog %q; refused", src.URL, cat.Spec.Source.Directory.Path, src.Catalog)
	}
	st, err := os.Stat(target)
	if err != nil {
		return nil, &catalog.FetchError{URL: src.URL, Err: err}
	}
	if st.IsDir() {
		return packDir(target, lim)
	}
	return readFileLimited(target, lim.MaxArchiveBytes)
}

// readFileLimited reads at most limit bytes of a regular file.
func readFileLimited(p string, limit int64) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &catalog.TooLargeError{URL: "file://" + p, Limit: limit}
	}
	return data, nil
}

// folderKind says what a folder holds: "chart" (Chart.yaml), "package"
// (operator.yaml), or "" for neither.
func folderKind(dir string) string {
	for kind, file := range map[string]string{"chart": "Chart.yaml", "package": catalog.PackageOperatorFile} {
		if st, err := os.Lstat(filepath.Join(dir, file)); err == nil && st.Mode().IsRegular() {
			return kind
		}
	}
	return ""
}

// packDir packs a chart folder with catalog.ChartArchive, or a package
// folder with catalog.PackageArchive, so the same folder always gives the same digest. It
// refuses symbolic links, special files, folders beyond the Limits and a
// folder holding both Chart.yaml and operator.yaml.
func packDir(dir string, lim catalog.Limits) ([]byte, error) {
	files, err := readFolder(dir, lim)
	if err != nil {
		return nil, err
	}
	_, chart := files["Chart.yaml"]
	_, pkg := files[catalog.PackageOperatorFile]
	switch {
	case chart && pkg:
		return nil, fmt.Errorf("%s holds both Chart.yaml and %s; a folder is one chart or one package, so move one of them", dir, catalog.PackageOperatorFile)
	case pkg:
		return catalog.PackageArchive(files)
	}
	return catalog.ChartArchive(filepath.Base(dir), files)
}

// PackPackageFolder packs a package folder (operator.yaml, params.yaml,
// templates/) the way a directory catalog does: the same bytes, hence the
// same digest, as the catalog serves for it. Errors name the file at fault:
// a missing operator.yaml, a symbolic link or special file, or a folder
// beyond lim.
func PackPackageFolder(dir string, lim catalog.Limits) ([]byte, error) {
	files, err := readFolder(dir, lim.WithDefaults())
	if err != nil {
		return nil, err
	}
	if _, ok := files[catalog.PackageOperatorFile]; !ok {
		return nil, fmt.Errorf("%s has no %s; a package folder holds operator.yaml, params.yaml and templates/", dir, catalog.PackageOperatorFile)
	}
	return catalog.PackageArchive(files)
}

// readFolder reads every file below dir, keyed by its slash-separated path,
// refusing symbolic links, special files and folders beyond the Limits.
func readFolder(dir string, lim catalog.Limits) (map[string][]byte, error) {
	files := map[string][]byte{}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return &catalog.UnsafeArchiveError{Entry: rel, Reason: "is a symbolic link; charts and packages may hold regular files only"}
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return &catalog.UnsafeArchiveError{Entry: rel, Reason: "is not a regular file; charts and packages may hold regular files only"}
		}
		if len(files) >= lim.MaxFiles {
			return &catalog.UnsafeArchiveError{Reason: fmt.Sprintf("more than %d files; a chart or package has far fewer", lim.MaxFiles)}
		}
		data, err := readFileLimited(p, lim.MaxFileBytes)
		if err != nil {
			var tl *catalog.TooLargeError
			if errors.As(err, &tl) {
				return &catalog.UnsafeArchiveError{Entry: rel, Reason: fmt.Sprintf("is more than the limit of %d bytes per file", lim.MaxFileBytes)}
			}
			return err
		}
		if total += int64(len(data)); total > lim.MaxExpandedBytes {
			return &catalog.UnsafeArchiveError{Reason: fmt.Sprintf("holds more than %d bytes", lim.MaxExpandedBytes)}
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}
