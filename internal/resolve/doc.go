// Package resolve chooses which versions of extensions to install. It is a
// pure core: it takes values (the catalogs' versions, the cluster's
// Kubernetes version, the installations' ranges and policies) and returns a
// choice or an Explanation a person can act on. It performs no I/O and reads
// no clock or randomness: the same input gives the same Resolution and the same
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
//   - One version per extension per cluster where the content reaches
//     beyond namespaces. The installations of an extension share one
//     version: content with a cluster-scoped object (a CRD, a webhook
//     configuration, a ClusterRole, an APIService, a Namespace of its own)
//     acts on the whole cluster, and two versions of it would overwrite
//     each other. An explanation of such a conflict names the object when
//     it is known ("team-a/x wants x ^1 (one version of x serves the whole
//     cluster: x 1.0.0 has the cluster-scoped CustomResourceDefinition
//     widgets.example.com)").
//   - Instances. An installation whose content is namespaced only
//     (Installation.Separable) shares the version too when it can; when
//     it cannot — its range, its policy or its dependencies conflict with
//     the shared version — it is solved apart, as an instance with a
//     version of its own, side by side with the others (two databases of
//     one operator for two teams, an app at two versions in two
//     namespaces). Its Selection is Resolution.Selected[InstanceKey(x,
//     "namespace/name")]; Resolution.For finds any installation's. In a
//     conflict, an installation that may run apart and admits none of the
//     versions another installation of its extension, or a dependency on
//     it, admits is solved apart from then on; one that may run apart and
//     is set aside for another reason is taken back apart if it fits only
//     so. Whether an installation may run apart comes from its content as
//     the controller rendered it (status.content, see Separable): rendered
//     content is what reaches the cluster, whatever a chart's values
//     switch on or off. An installation of which nothing is installed and
//     whose content is not known yet may run apart until it renders; the
//     controller applies nothing cluster-scoped at a version another
//     installation of the extension runs differently, records the object,
//     and the next solve shares the version.
//   - Dependencies are met by the shared version: another extension's
//     dependency on x constrains x's shared version, never an instance of
//     x, and an instance's own dependencies are met by the shared
//     versions of what it needs, together with everyone else's. When no
//     installation of x can share the version dependents need, x is added.
//   - Dependencies are on extensions, with Masterminds semver v3 ranges (^,
//     ~, x, *, ||, hyphen ranges, comma or space for AND). A pre-release
//     matches only a range that names a pre-release.
//   - A version whose kubeVersion does not admit the cluster is not a
//     candidate. The cluster's release part is compared ("v1.33.4-gke.100"
//     and "v1.33.4+k3s1" are 1.33.4), so Helm floors like ">=1.28.0-0" work.
//   - Installed with automatic upgrades off pins the installed version;
//     installed without allowDowngrade forbids lower versions.
//   - Operator packages (versions with channels, engine Bundle) resolve
//     in one channel: spec.channel, else the package's defaultChannel
//     (Selection.DefaultChannelUsed says so; it reaches the Index through
//     IndexOf), else, when the package has none, every channel together.
//     Only the channel's bundles are candidates. A channel the package
//     lacks fails, listing the channels; so does a range that admits no
//     bundle of the channel, and spec.channel on an extension without
//     channels. A bundle that only deprecated channels carry is preferred
//     last, like a deprecated version.
//   - Upgrade graph (spec.upgrade.graph). With Successors, the default
//     and OLM's rule, an installed operator may move only to a version
//     that the channel's upgrade edges lead to: an entry whose replaces or
//     skips names the installed version or whose skipRange contains it is
//     a direct successor, and edges chain. The highest reachable version
//     in range is chosen as the target, but Selection.Version is the next
//     hop, the highest direct successor from which the target is
//     reachable; Selection.Target and Selection.Hop ("x 0.3.0 is not a
//     successor of 0.1.0 in channel stable; 0.2.0 is — it will be
//     installed first") tell the rest. The caller installs the hop, waits
//     until it is healthy, and solves again. Hops on the way must run on
//     the cluster but need not lie in spec.version: they are passed
//     through. When no edge leads to a version in range, the installation
//     fails, naming the installed version's successors. A channel switch
//     under Successors needs the installed version to be in the new
//     channel or to have a direct successor there; otherwise it fails.
//     With AnyInRange the plain rules apply within the channel: any
//     version of it in range, in one step.
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
