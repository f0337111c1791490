// Package olm reads OLM File-Based Catalogs (olm.package, olm.channel,
// olm.bundle, olm.deprecations; JSON or YAML) from an HTTP URL, a folder,
// or a catalog image's /configs (Index, Parse), and fetches the
// registry+v1 bundles their versions point at (FetchBundle): bundle
// images, bundles inline in the catalog (olm.bundle.object, served as
// olm://<catalog>/<package>/<bundle>) and bundle archives of the built-in
// catalog (builtin://<name>/<version>). Everything read is bounded by the
// Fetcher's Limits and refused when an archive or image could escape its
// folders.
package olm
