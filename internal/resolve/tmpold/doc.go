// Package resolve chooses which versions of extensions to install. It is a
// pure core: it takes values (the catalogs' versions, the cluster's
// Kubernetes version, the installations' ranges and policies) and returns a
// choice or an Explanation a person can act on. It performs no I/O and reads
// no clock or randomness: the same input gives the same Plan and the same
// texts, byte for byte.
//
// Resolver resolves one installation on its own; Index.Solve resolves every
// installation on a cluster together with a complete solver (PubGrub, as in
// Dart's pub, uv and Cargo): unit propagation over incompatibilities,
// decisions, and conflict resolution that learns new incompatibilities and
// backjumps. Version sets are bitsets over each extension's known versions,
// so ranges are evaluated once, in NewIndex.
//
// The rules Solve applies:
//
//   - One version per extension per cluster. Every installation of an
//     extension must agree on it (CRDs and webhooks are cluster-wide).
//   - Dependencies are on extensions, with Masterminds semver v3 ranges (^,
//     ~, x, *, ||, hyphen ranges, comma or space for AND). A pre-release
//     matches only a range that names a pre-release.
//   - A version whose kubeVersion does not admit the cluster is not a
//     candidate. The cluster's release part is compared ("v1.33.4-gke.100"
//     and "v1.33.4+k3s1" are 1.33.4), so Helm floors like ">=1.28.0-0" work.
//   - Installed with automatic upgrades off pins the installed version;
//     installed without allowDowngrade forbids lower versions.
//   - Preferences, in order: keep the installed version unless a higher
//     non-deprecated one is allowed; otherwise the highest version;
//     deprecated versions only when nothing else is allowed. Among
//     extensions, the one with the fewest candidates is decided first, ties
//     by name.
//   - A selection whose dependencies form a cycle is ruled out and solving
//     goes on; if only cyclic choices remain, the installation fails with
//     reason DependencyCycle and a message naming the cycle
//     ("a 1.0.0 → b 2.0.0 → a 1.0.0").
//   - Failures are per installation. An unknown extension fails with
//     ExtensionNotFound, a bad or empty range with NoMatchingVersion, before
//     solving. When the set cannot be solved, one installation named in the
//     conflict is set aside (a new one before an installed one, then the
//     last by name) and the rest solved again; at the end every set-aside
//     installation that fits with the final set is taken back. So each
//     failed installation conflicts with the installations that did not
//     fail, and its Explanation tells that conflict: the facts as a chain
//     starting at the installation, then one or two changes that were
//     checked by solving again (upgrade the cluster, change spec.version,
//     turn on spec.upgrade.automatic or allowDowngrade, add a Catalog).
package resolve
