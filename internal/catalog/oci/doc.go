// Package oci reads Helm charts and Annex packages stored in an OCI
// registry: every repository directly below a catalog's
// spec.source.oci.repository (or that repository itself) is a chart or a
// package, every tag a version ("_" stands for "+"). Chart.yaml, or a
// package's helm.PackageMetadata, comes from the manifest's config blob,
// which its media type tells apart (MediaTypeHelmConfig,
// MediaTypePackageConfig); the entries go through helm.IndexFromEntries,
// and artifact URLs are oci://<repository>@<manifest digest>, served by
// FetchArtifact. PushPackage writes packages the way Index reads them.
//
// PullImage and WalkImage read container images within limits, refusing
// links, special files and escaping paths; package olm reads catalog and
// bundle images with them.
package oci
