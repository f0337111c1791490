// Package sources is the one place that knows every catalog source kind.
// Catalogs reads a Catalog of any kind into a catalog.Index:
//
//   - helm: <url>/index.yaml, with ETag / If-Modified-Since so that an
//     unchanged index is answered 304 and reused (package helm).
//   - oci: the charts and packages of an OCI repository (package oci).
//   - directory: chart and package folders and packed archives in one
//     folder (package directory).
//   - olm: an OLM File-Based Catalog (package olm).
//   - builtin: the charts and packages compiled into Annex (package
//     builtin, through Catalogs.Builtin).
//
// The last good content of each catalog is kept in memory and in
// CacheDir; when a source cannot be read it is served with Index.Stale
// set. A catalog's credentials come from the Secret its secretRef names,
// read through the Lookup.
//
// Artifacts serves every URL those kinds write into an Extension's
// versions: http(s)://, oci://, file:// and builtin:// archives, checked
// against their digest and with catalog.CheckArchive, and operator bundles
// (olm.FetchBundle).
package sources
