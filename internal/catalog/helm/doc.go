// Package helm reads Helm repository indexes — and KUDO repository indexes,
// whose entries are Annex packages — into a catalog.Index: ParseIndex maps
// index.yaml onto Extensions, FetchIndexIfChanged downloads it with ETag /
// If-Modified-Since so that an unchanged index is answered 304 and reused,
// and the KUDO package metadata (operator.yaml) is read and written here
// too. Parsing is pure (bytes in, values out). The other source kinds
// (oci, directory, the built-in catalog) write their content as index
// entries and parse it with ParseIndex (IndexFromEntries), so the mapping
// below holds for them too.
//
// # Helm repository index → Extension
//
// ParseIndex reads a Helm repository's index.yaml. This mapping is the
// contract catalog authors rely on:
//
//   - Every chart name in entries becomes one Package (one Extension object)
//     named after the chart. The name must be a valid Kubernetes object name
//     (a lower-case DNS-1123 subdomain); otherwise all its entries are skipped.
//   - Every entry of a chart becomes one ExtensionVersion:
//     version          → Version (must parse as a semantic version, Masterminds v3);
//     appVersion       → AppVersion;
//     kubeVersion      → KubeVersion (must parse as a version range);
//     deprecated       → Deprecated;
//     urls[0]          → Source.URL, resolved against the repository URL when relative;
//     digest (64 hex)  → Source.Digest as "sha256:<hex>" (omitted when the index has none);
//     catalog name     → Source.Catalog.
//   - Dependencies on other extensions come from the Chart.yaml annotation
//     annex.dev/dependencies, a YAML list of {name, version} where version is a
//     range (see the example below). Chart.yaml's own dependencies are Helm
//     subcharts rendered inside the chart; they are not Annex dependencies and
//     are ignored here.
//   - Display fields come from the highest valid version: description, icon,
//     keywords, home, and the annotation annex.dev/display-name (DisplayName,
//     default: the chart name).
//   - ValuesSchema stays nil: a Helm index does not carry values.schema.json.
//     The manager reads it and values.yaml from the archive when someone
//     asks (internal/controller/extension), into the Extension's
//     status.values.
//
// A chart that needs cert-manager 1.14 or later says so in its Chart.yaml:
//
//	annotations:
//	  annex.dev/display-name: My Operator
//	  annex.dev/dependencies: |
//	    - name: cert-manager
//	      version: ">=1.14.0"
//
// An entry that breaks a rule above is skipped, not fatal: the rest of the
// index still syncs and Index.Skipped holds one line per skipped entry naming
// the chart, the version and the reason, for example
// `entry "foo" 1.x: version is not semver`. Skipped are entries with no name,
// no urls, a name that differs from its key in entries, an invalid version, an
// invalid kubeVersion, a malformed annex.dev/dependencies annotation, and the
// second and later copies of the same (name, version).
//
// Packages are sorted by name and each package's versions highest first, so
// the same index always yields the same Index.
//
// # Packages in a repository index
//
// An entry with operatorVersion is an Annex package (a KUDO operator
// package, read by the package engine) instead of a Helm chart. KUDO
// repositories publish exactly such entries (`kubectl kudo repo index`:
// name, operatorVersion, appVersion, description, maintainers, urls,
// digest), so their index.yaml reads as is. A package entry maps as a
// chart entry does, except:
//
//	operatorVersion   → Version (semver), and Engine: Package; version must
//	                    be absent or equal
//	kubeVersion       → KubeVersion, a range, as for charts
//	kubernetesVersion → KubeVersion ">=<kubernetesVersion>" when kubeVersion
//	                    is absent: KUDO's minimum Kubernetes version
//	extends           → Extends {name, version}: the base package, written
//	                    {operator, version} as in operator.yaml (KUDO
//	                    KEP-0012; name for operator, or nested under kudo,
//	                    are read too); the version is a range matched
//	                    against the base's operatorVersion or appVersion
//	removed: true     → Deprecated (KUDO's mark for a withdrawn version)
//
// Annotations (annex.dev/dependencies, annex.dev/display-name), home, icon,
// keywords, deprecated, urls and digest mean what they mean for a chart.
// extends on an entry without operatorVersion is refused. AddPackageToIndex
// writes such an entry for a package archive (annexctl package --index):
//
//	apiVersion: v1
//	entries:
//	  mysql-analytics:
//	  - name: mysql-analytics
//	    operatorVersion: 0.1.0
//	    kubernetesVersion: 1.30.0
//	    description: ...
//	    extends: {operator: mysql, version: ">=0.1.0 <1.0.0"}
//	    urls: [mysql-analytics-0.1.0.tgz]
//	    digest: 3f1c...
//
// A package archive is a .tgz of the package folder with operator.yaml,
// params.yaml and templates/ at its root, as KUDO packs it;
// catalog.PackageArchive writes it deterministically.
//
// # Fuzzing
//
// FuzzParseHelmIndex, FuzzFastDecoder (the fast YAML decoder against
// yaml.v3) and FuzzAddPackageToIndex run their seed corpora (testdata/fuzz)
// with every `go test`. To fuzz one for longer:
//
//	go test ./internal/catalog/helm -run '^$' -fuzz FuzzFastDecoder -fuzztime 10m
//
// A failing input is written to testdata/fuzz/<target>/ and becomes a seed.
package helm
