// Package catalog is the core the catalog sources share: the Index a
// source yields (one Package per extension), the Fetcher every source
// reads through (HTTP with limits, credentials per host, digests), the
// archive checks, the caches of fetched artifacts, and Merge. Each source
// kind lives in a package of its own and turns its format into an Index:
//
//   - helm: a Helm (or KUDO) repository index.yaml, fetched over HTTP with
//     ETag / If-Modified-Since, and the KUDO package metadata it carries.
//   - oci: the charts and packages of an OCI repository, and PushPackage.
//   - directory: chart and package folders and packed archives in a folder.
//   - olm: OLM File-Based Catalogs and registry+v1 bundles.
//   - builtin: the charts and packages compiled into Annex.
//
// Package sources reads a Catalog of any kind and serves the artifact URLs
// every kind writes; it is the one place that knows them all. Every kind
// but olm goes through helm.ParseIndex, so validation and sanitising are
// the same.
//
// # Index and Merge
//
// An Index lists Packages sorted by name, each with its versions highest
// first, and the entries the source skipped with the reason. Merge
// combines the indexes of several catalogs by spec.priority into one
// ExtensionSpec per extension name.
//
// # Credentials
//
// Credentials come from the Secret named by secretRef (AccessFor):
// username/password (basic), token (bearer), ca.crt, tls.crt/tls.key. They
// are sent only to the host of the catalog's URL, never to another host a
// chart URL or a redirect points at, and never over plain http unless the
// catalog sets insecure.
//
// # Fetching and limits
//
// Fetcher reads with the size Limits (index 50 MiB, archive 10 MiB
// compressed and 100 MiB expanded, 5 MiB per file, 10,000 files, 1 GiB per
// OLM catalog), serves builtin://<name>/<version> through its Builtin
// function (wired by the caller to builtin.Archive, which cannot be
// imported here without a cycle), and VerifyDigest checks an artifact
// against the digest its source names. Every archive is walked with
// CheckArchive (CheckBundleArchive for an operator bundle) before it is
// used: links, devices, absolute or parent paths, duplicates and
// decompression bombs are refused before Helm's loader sees them.
// DiskCache keeps artifacts by digest on disk with LRU eviction;
// MemoryCache keeps the most recent in memory. ReadChartValues reads a
// checked chart archive's values.schema.json and values.yaml, which the
// manager writes into an Extension's status.values when someone asks.
//
// # Fuzzing
//
// The archive checks are package archive's (CheckArchive there, whose
// FuzzCheckArchive runs its seed corpus with every `go test`); the
// parsers' fuzz targets live with them in package helm. To fuzz one for
// longer:
//
//	go test ./internal/catalog/helm -run '^$' -fuzz FuzzParseHelmIndex -fuzztime 10m
//
// A failing input is written to testdata/fuzz/<target>/ and becomes a seed.
package catalog
