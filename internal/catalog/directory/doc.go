// Package directory reads a catalog kept in a folder on the manager's
// machine: chart folders (Chart.yaml), package folders (operator.yaml)
// and packed .tgz files, side by side in spec.source.directory.path.
// Folders are packed deterministically, so a folder has one digest
// wherever it is packed (PackPackageFolder is what `annexctl package`
// uses); the entries go through helm.IndexFromEntries. Artifact URLs are
// file:// paths, and FetchArtifact serves them only inside that catalog's
// folder.
package directory
