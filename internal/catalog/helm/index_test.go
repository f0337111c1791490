package helm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/helm"
)

const (
	repo       = "https://charts.example.com/stable"
	digestA    = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB    = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	catalogRef = "stable"
)

// version builds the ExtensionVersion a test expects, with the source from
// catalog "stable".
func version(v, url, digest string) v1alpha1.ExtensionVersion {
	return v1alpha1.ExtensionVersion{Version: v, Source: v1alpha1.ArtifactSource{Catalog: catalogRef, URL: url, Digest: digest}}
}

// with applies changes to a copy of v.
func with(v v1alpha1.ExtensionVersion, change func(*v1alpha1.ExtensionVersion)) v1alpha1.ExtensionVersion {
	change(&v)
	return v
}

func TestParseHelmIndex(t *testing.T) {
	tests := []struct {
		name    string
		repoURL string // default repo
		index   string
		want    []catalog.Package
		skipped []string
	}{
		{
			// Every mapped field of a well-formed entry, display fields from
			// the highest version, Chart.yaml dependencies ignored.
			name: "good index",
			index: `apiVersion: v1
entries:
  podinfo:
  - apiVersion: v2
    name: podinfo
    version: 6.5.0
    appVersion: 6.5.0
    kubeVersion: ">=1.23.0-0"
    description: Podinfo Helm chart for Kubernetes (new)
    home: https://github.com/stefanprodan/podinfo
    icon: https://example.com/podinfo.png
    keywords: [podinfo, demo]
    annotations:
      annex.dev/display-name: Podinfo
      annex.dev/dependencies: |
        - name: cert-manager
          version: ">=1.14.0"
        - name: metrics-server
    dependencies:
    - name: redis
      version: 17.x
      repository: https://charts.bitnami.com/bitnami
    urls: [podinfo-6.5.0.tgz]
    digest: ` + digestA + `
  - apiVersion: v2
    name: podinfo
    version: 6.4.0
    appVersion: 6.4.0
    description: Podinfo Helm chart for Kubernetes (old)
    deprecated: true
    urls: [podinfo-6.4.0.tgz]
    digest: ` + digestB + `
generated: "2024-01-01T00:00:00Z"
`,
			want: []catalog.Package{{Name: "podinfo", Spec: v1alpha1.ExtensionSpec{
				DisplayName: "Podinfo",
				Description: "Podinfo Helm chart for Kubernetes (new)",
				Home:        "https://github.com/stefanprodan/podinfo",
				Icon:        "https://example.com/podinfo.png",
				Keywords:    []string{"podinfo", "demo"},
				Versions: []v1alpha1.ExtensionVersion{
					with(version("6.5.0", repo+"/podinfo-6.5.0.tgz", "sha256:"+digestA), func(v *v1alpha1.ExtensionVersion) {
						v.AppVersion = "6.5.0"
						v.KubeVersion = ">=1.23.0-0"
						v.Dependencies = []v1alpha1.Dependency{{Name: "cert-manager", Version: ">=1.14.0"}, {Name: "metrics-server"}}
					}),
					with(version("6.4.0", repo+"/podinfo-6.4.0.tgz", "sha256:"+digestB), func(v *v1alpha1.ExtensionVersion) {
						v.AppVersion = "6.4.0"
						v.Deprecated = true
					}),
				},
			}}},
		},
		{
			// Relative URLs resolve against the repository's directory, with
			// or without a trailing slash, and keep the repository's query;
			// absolute URLs stay as written.
			name:    "relative and absolute urls",
			repoURL: "https://charts.example.com/stable/?token=abc",
			index: `apiVersion: v1
entries:
  a:
  - {name: a, version: 1.0.0, urls: [charts/a-1.0.0.tgz]}
  - {name: a, version: 2.0.0, urls: ["/root/a-2.0.0.tgz"]}
  - {name: a, version: 3.0.0, urls: ["https://cdn.example.org/a-3.0.0.tgz", "https://mirror.example.org/a-3.0.0.tgz"]}
  - {name: a, version: 4.0.0, urls: ["a-4.0.0.tgz?sig=1"]}
`,
			want: []catalog.Package{{Name: "a", Spec: v1alpha1.ExtensionSpec{DisplayName: "a", Versions: []v1alpha1.ExtensionVersion{
				version("4.0.0", "https://charts.example.com/stable/a-4.0.0.tgz?sig=1", ""),
				version("3.0.0", "https://cdn.example.org/a-3.0.0.tgz", ""),
				version("2.0.0", "https://charts.example.com/root/a-2.0.0.tgz?token=abc", ""),
				version("1.0.0", "https://charts.example.com/stable/charts/a-1.0.0.tgz?token=abc", ""),
			}}}},
		},
		{
			// A relative URL needs an absolute repository URL.
			name:    "relative url without repository url",
			repoURL: "not-a-url",
			index: `apiVersion: v1
entries:
  a:
  - {name: a, version: 1.0.0, urls: [a-1.0.0.tgz]}
`,
			skipped: []string{`entry "a" 1.0.0: url "a-1.0.0.tgz" is relative and the repository URL "not-a-url" is not absolute`},
		},
		{
			// Only a 64-hex digest is kept, lower-cased; anything else leaves
			// the version without a digest rather than skipping it.
			name: "digests",
			index: `apiVersion: v1
entries:
  a:
  - {name: a, version: 1.0.0, urls: [a.tgz], digest: ` + strings.ToUpper(digestA) + `}
  - {name: a, version: 2.0.0, urls: [a.tgz], digest: "sha256:` + digestB + `"}
  - {name: a, version: 3.0.0, urls: [a.tgz], digest: abc123}
  - {name: a, version: 4.0.0, urls: [a.tgz]}
`,
			want: []catalog.Package{{Name: "a", Spec: v1alpha1.ExtensionSpec{DisplayName: "a", Versions: []v1alpha1.ExtensionVersion{
				version("4.0.0", repo+"/a.tgz", ""),
				version("3.0.0", repo+"/a.tgz", ""),
				version("2.0.0", repo+"/a.tgz", "sha256:"+digestB),
				version("1.0.0", repo+"/a.tgz", "sha256:"+digestA),
			}}}},
		},
		{
			// A malformed dependencies annotation skips that version only, with
			// the reason; an empty annotation means no dependencies.
			name: "annotation dependencies",
			index: `apiVersion: v1
entries:
  app:
  - {name: app, version: 1.0.0, urls: [a.tgz], annotations: {annex.dev/dependencies: ""}}
  - {name: app, version: 1.1.0, urls: [a.tgz], annotations: {annex.dev/dependencies: "name: db"}}
  - {name: app, version: 1.2.0, urls: [a.tgz], annotations: {annex.dev/dependencies: "- name: db\n  versions: 1.x"}}
  - {name: app, version: 1.3.0, urls: [a.tgz], annotations: {annex.dev/dependencies: "- name: db\n  version: '>>1'"}}
  - {name: app, version: 1.4.0, urls: [a.tgz], annotations: {annex.dev/dependencies: "- name: app"}}
  - {name: app, version: 1.5.0, urls: [a.tgz], annotations: {annex.dev/dependencies: "- name: db\n- name: db"}}
  - {name: app, version: 1.6.0, urls: [a.tgz], annotations: {annex.dev/dependencies: "- name: Db"}}
  - {name: app, version: 1.7.0, urls: [a.tgz], annotations: {annex.dev/dependencies: "- version: 1.x"}}
  - {name: app, version: 1.8.0, urls: [a.tgz], annotations: {annex.dev/dependencies: "- name: db\n  version: ^2.1 || ~3.0\n- name: cache\n  version: 1.2 - 1.4"}}
`,
			want: []catalog.Package{{Name: "app", Spec: v1alpha1.ExtensionSpec{DisplayName: "app", Versions: []v1alpha1.ExtensionVersion{
				with(version("1.8.0", repo+"/a.tgz", ""), func(v *v1alpha1.ExtensionVersion) {
					v.Dependencies = []v1alpha1.Dependency{{Name: "db", Version: "^2.1 || ~3.0"}, {Name: "cache", Version: "1.2 - 1.4"}}
				}),
				version("1.0.0", repo+"/a.tgz", ""),
			}}}},
			skipped: []string{
				`entry "app" 1.1.0: annotation annex.dev/dependencies: must be a YAML list of {name, version}`,
				`entry "app" 1.2.0: annotation annex.dev/dependencies: item 1: unknown key "versions"; an item has only name and version`,
				`entry "app" 1.3.0: annotation annex.dev/dependencies: item 1 (db): version ">>1" is not a version range: improper constraint: ">>1"`,
				`entry "app" 1.4.0: annotation annex.dev/dependencies: item 1: "app" depends on itself`,
				`entry "app" 1.5.0: annotation annex.dev/dependencies: item 2: "db" is listed twice; merge the ranges into one item`,
				`entry "app" 1.6.0: annotation annex.dev/dependencies: item 1: name "Db" is not a valid extension name`,
				`entry "app" 1.7.0: annotation annex.dev/dependencies: item 1 has no name`,
			},
		},
		{
			// kubeVersion must be a range both Masterminds and the Extension
			// CRD accept; a bad one skips the version.
			name: "kubeVersion",
			index: `apiVersion: v1
entries:
  a:
  - {name: a, version: 1.0.0, urls: [a.tgz], kubeVersion: ">= 1.28.0-0 < 1.31.0"}
  - {name: a, version: 1.1.0, urls: [a.tgz], kubeVersion: "1.28+"}
  - {name: a, version: 1.2.0, urls: [a.tgz], kubeVersion: "latest"}
`,
			want: []catalog.Package{{Name: "a", Spec: v1alpha1.ExtensionSpec{DisplayName: "a", Versions: []v1alpha1.ExtensionVersion{
				with(version("1.0.0", repo+"/a.tgz", ""), func(v *v1alpha1.ExtensionVersion) { v.KubeVersion = ">= 1.28.0-0 < 1.31.0" }),
			}}}},
			skipped: []string{
				`entry "a" 1.1.0: kubeVersion "1.28+" is not a version range: improper constraint: "1.28+"`,
				`entry "a" 1.2.0: kubeVersion "latest" is not a version range: improper constraint: "latest"`,
			},
		},
		{
			// Each malformed entry is skipped with its reason; the chart keeps
			// its good entries and a chart with none left disappears.
			name: "malformed entries",
			index: `apiVersion: v1
entries:
  foo:
  - {name: foo, version: 1.x, urls: [foo.tgz]}
  - {version: 1.0.0, urls: [foo.tgz]}
  - {name: foo, urls: [foo.tgz]}
  - {name: foo, version: 1.1.0}
  - {name: foo, version: 1.2.0, urls: [""]}
  - {name: bar, version: 1.3.0, urls: [foo.tgz]}
  - just a string
  - {name: foo, version: 1.4.0, urls: [foo.tgz], deprecated: "maybe"}
  - {name: foo, version: 1.5.0, urls: [foo.tgz], annotations: {a: [1, 2]}}
  - ~
  - {name: foo, version: 2.0.0, urls: [foo.tgz]}
  Upper:
  - {name: Upper, version: 1.0.0, urls: [u.tgz]}
  notalist: {name: notalist}
`,
			want: []catalog.Package{{Name: "foo", Spec: v1alpha1.ExtensionSpec{DisplayName: "foo", Versions: []v1alpha1.ExtensionVersion{
				version("2.0.0", repo+"/foo.tgz", ""),
			}}}},
			skipped: []string{
				`entry "Upper": name is not a valid Kubernetes object name (a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')); rename the chart`,
				`entry "foo" 1.x: version is not semver (major.minor.patch)`,
				`entry "foo" 1.0.0: has no name`,
				`entry "foo" #3: has no version (a chart) or operatorVersion (a package)`,
				`entry "foo" 1.1.0: has no urls`,
				`entry "foo" 1.2.0: has no urls`,
				`entry "foo" 1.3.0: name "bar" differs from its key "foo" in entries`,
				`entry "foo" #7: must be a mapping of chart fields (line 10)`,
				"entry \"foo\" #8: line 11: cannot unmarshal !!str `maybe` into bool",
				`entry "foo" #9: line 12: cannot unmarshal !!seq into string`,
				`entry "foo" #10: must be a mapping of chart fields (line 13)`,
				`entry "notalist": must be a list of chart versions (line 17)`,
			},
		},
		{
			// The first of two equal versions wins; "v1.0.0" equals "1.0.0".
			name: "duplicates",
			index: `apiVersion: v1
entries:
  a:
  - {name: a, version: 1.0.0, urls: [first.tgz]}
  - {name: a, version: 1.0.0, urls: [second.tgz]}
  - {name: a, version: v1.0.0, urls: [third.tgz]}
`,
			want: []catalog.Package{{Name: "a", Spec: v1alpha1.ExtensionSpec{DisplayName: "a", Versions: []v1alpha1.ExtensionVersion{
				version("1.0.0", repo+"/first.tgz", ""),
			}}}},
			skipped: []string{
				`entry "a" 1.0.0: duplicate version; the first entry is kept`,
				`entry "a" v1.0.0: duplicate version; the first entry is kept`,
			},
		},
		{
			// Versions are ordered by semver precedence, not as written:
			// a release beats its pre-releases, 1.10 beats 1.9, and build
			// metadata ties are broken by text.
			name: "highest version first",
			index: `apiVersion: v1
entries:
  a:
  - {name: a, version: 1.9.0, urls: [a.tgz], description: old}
  - {name: a, version: 1.10.0-rc.1, urls: [a.tgz], description: rc}
  - {name: a, version: 1.10.0+b, urls: [a.tgz], description: newest-b}
  - {name: a, version: 1.10.0+a, urls: [a.tgz], description: newest-a}
  - {name: a, version: 0.1.0, urls: [a.tgz]}
`,
			want: []catalog.Package{{Name: "a", Spec: v1alpha1.ExtensionSpec{DisplayName: "a", Description: "newest-a", Versions: []v1alpha1.ExtensionVersion{
				version("1.10.0+a", repo+"/a.tgz", ""),
				version("1.10.0+b", repo+"/a.tgz", ""),
				version("1.10.0-rc.1", repo+"/a.tgz", ""),
				version("1.9.0", repo+"/a.tgz", ""),
				version("0.1.0", repo+"/a.tgz", ""),
			}}}},
		},
		{
			// Packages come out sorted by name whatever the index order, and
			// YAML scalars that look like numbers keep their text.
			name: "packages sorted by name",
			index: `apiVersion: v1
entries:
  zeta:
  - {name: zeta, version: 1.0.0, appVersion: 1.10, urls: [z.tgz]}
  alpha:
  - {name: alpha, version: 1.0.0, urls: [a.tgz]}
  mid.dotted:
  - {name: mid.dotted, version: 1.0.0, urls: [m.tgz]}
`,
			want: []catalog.Package{
				{Name: "alpha", Spec: v1alpha1.ExtensionSpec{DisplayName: "alpha", Versions: []v1alpha1.ExtensionVersion{version("1.0.0", repo+"/a.tgz", "")}}},
				{Name: "mid.dotted", Spec: v1alpha1.ExtensionSpec{DisplayName: "mid.dotted", Versions: []v1alpha1.ExtensionVersion{version("1.0.0", repo+"/m.tgz", "")}}},
				{Name: "zeta", Spec: v1alpha1.ExtensionSpec{DisplayName: "zeta", Versions: []v1alpha1.ExtensionVersion{
					with(version("1.0.0", repo+"/z.tgz", ""), func(v *v1alpha1.ExtensionVersion) { v.AppVersion = "1.10" }),
				}}},
			},
		},
		{
			// A KUDO repository's index as `kubectl kudo repo index` writes it:
			// entries with operatorVersion are packages (engine Package);
			// removed marks a withdrawn version, which stays installable
			// only as a deprecated one.
			name: "kudo repository index",
			index: `apiVersion: v1
entries:
  flink:
  - appVersion: 0.7.0
    description: fancy description is here
    digest: ` + digestA + `
    maintainers:
    - email: <fabian@mesosphere.io>
      name: Fabian Baier
    name: flink
    operatorVersion: 0.3.0
    urls:
    - flink-0.7.0_0.3.0.tgz
  - appVersion: 0.7.0
    name: flink
    operatorVersion: 0.2.0
    removed: true
    urls:
    - flink-0.7.0_0.2.0.tgz
generated: "2019-08-09T15:04:00Z"
`,
			want: []catalog.Package{{Name: "flink", Spec: v1alpha1.ExtensionSpec{
				DisplayName: "flink",
				Description: "fancy description is here",
				Versions: []v1alpha1.ExtensionVersion{
					with(version("0.3.0", repo+"/flink-0.7.0_0.3.0.tgz", "sha256:"+digestA), func(v *v1alpha1.ExtensionVersion) {
						v.AppVersion, v.Engine = "0.7.0", v1alpha1.EnginePackage
					}),
					with(version("0.2.0", repo+"/flink-0.7.0_0.2.0.tgz", ""), func(v *v1alpha1.ExtensionVersion) {
						v.AppVersion, v.Engine, v.Deprecated = "0.7.0", v1alpha1.EnginePackage, true
					}),
				},
			}}},
		},
		{
			// Annex's package fields: kubernetesVersion is a minimum, a
			// kubeVersion range wins over it; extends names the base with
			// operator, name, or the KEP's nested kudo; a version equal to
			// operatorVersion is allowed; a chart and packages may share a
			// name (the engine is per version).
			name: "package fields",
			index: `apiVersion: v1
entries:
  mysql-analytics:
  - name: mysql-analytics
    operatorVersion: 0.3.0
    kubernetesVersion: 1.30.0
    extends: {operator: mysql, version: ">=0.1.0 <1.0.0"}
    urls: [a-0.3.0.tgz]
  - name: mysql-analytics
    operatorVersion: 0.2.0
    version: 0.2.0
    kubernetesVersion: 1.29.0
    kubeVersion: ">=1.28.0-0 <1.40.0-0"
    extends: {name: mysql}
    urls: [a-0.2.0.tgz]
  - name: mysql-analytics
    operatorVersion: 0.1.0
    extends:
      kudo: {operator: mysql, version: "5.7"}
    urls: [a-0.1.0.tgz]
  - name: mysql-analytics
    version: 0.0.1
    urls: [chart-0.0.1.tgz]
`,
			want: []catalog.Package{{Name: "mysql-analytics", Spec: v1alpha1.ExtensionSpec{DisplayName: "mysql-analytics", Versions: []v1alpha1.ExtensionVersion{
				with(version("0.3.0", repo+"/a-0.3.0.tgz", ""), func(v *v1alpha1.ExtensionVersion) {
					v.Engine, v.KubeVersion = v1alpha1.EnginePackage, ">=1.30.0"
					v.Extends = &v1alpha1.Dependency{Name: "mysql", Version: ">=0.1.0 <1.0.0"}
				}),
				with(version("0.2.0", repo+"/a-0.2.0.tgz", ""), func(v *v1alpha1.ExtensionVersion) {
					v.Engine, v.KubeVersion = v1alpha1.EnginePackage, ">=1.28.0-0 <1.40.0-0"
					v.Extends = &v1alpha1.Dependency{Name: "mysql"}
				}),
				with(version("0.1.0", repo+"/a-0.1.0.tgz", ""), func(v *v1alpha1.ExtensionVersion) {
					v.Engine = v1alpha1.EnginePackage
					v.Extends = &v1alpha1.Dependency{Name: "mysql", Version: "5.7"}
				}),
				version("0.0.1", repo+"/chart-0.0.1.tgz", ""),
			}}}},
		},
		{
			// Malformed package entries are skipped with a reason naming the
			// field and the fix.
			name: "malformed package entries",
			index: `apiVersion: v1
entries:
  p:
  - {name: p, operatorVersion: 1.x, urls: [p.tgz]}
  - {name: p, operatorVersion: 1.0.0, version: 2.0.0, urls: [p.tgz]}
  - {name: p, version: 1.1.0, extends: {operator: base}, urls: [p.tgz]}
  - {name: p, operatorVersion: 1.2.0, kubernetesVersion: latest, urls: [p.tgz]}
  - {name: p, operatorVersion: 1.3.0, extends: {version: "1.0.0"}, urls: [p.tgz]}
  - {name: p, operatorVersion: 1.4.0, extends: {operator: p}, urls: [p.tgz]}
  - {name: p, operatorVersion: 1.5.0, extends: {operator: a, name: b}, urls: [p.tgz]}
  - {name: p, operatorVersion: 1.6.0, extends: {operator: Base}, urls: [p.tgz]}
  - {name: p, operatorVersion: 1.7.0, extends: {operator: base, version: newest}, urls: [p.tgz]}
  - {name: p, operatorVersion: 1.8.0, extends: base, urls: [p.tgz]}
  - {name: p, operatorVersion: 2.0.0, urls: [p.tgz]}
`,
			want: []catalog.Package{{Name: "p", Spec: v1alpha1.ExtensionSpec{DisplayName: "p", Versions: []v1alpha1.ExtensionVersion{
				with(version("2.0.0", repo+"/p.tgz", ""), func(v *v1alpha1.ExtensionVersion) { v.Engine = v1alpha1.EnginePackage }),
			}}}},
			skipped: []string{
				`entry "p" 1.x: operatorVersion is not semver (major.minor.patch)`,
				`entry "p" 1.0.0: sets version "2.0.0" and operatorVersion "1.0.0"; a package entry has only operatorVersion`,
				`entry "p" 1.1.0: sets extends but no operatorVersion; only packages extend a base, and a package entry has operatorVersion`,
				`entry "p" 1.2.0: kubernetesVersion "latest" is not a version; it is the lowest Kubernetes version the package supports, such as 1.28.0 (write a range in kubeVersion instead)`,
				`entry "p" 1.3.0: extends has no operator; set extends.operator to the base package's name`,
				`entry "p" 1.4.0: extends.operator "p": a package cannot extend itself`,
				`entry "p" 1.5.0: extends names the base both as "a" and "b"; keep one`,
				`entry "p" 1.6.0: extends.operator "Base" is not a valid extension name`,
				`entry "p" 1.7.0: extends.version "newest" is not a version range: improper constraint: "newest"`,
				"entry \"p\" #10: line 13: cannot unmarshal !!str `base` into helm.PackageExtends",
			},
		},
		{
			// An index with no charts is valid and empty.
			name:  "no entries",
			index: "apiVersion: v1\nentries: {}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repoURL := tt.repoURL
			if repoURL == "" {
				repoURL = repo
			}
			got, err := helm.ParseIndex([]byte(tt.index), repoURL, catalogRef)
			if err != nil {
				t.Fatalf("ParseIndex: %v", err)
			}
			if !reflect.DeepEqual(got.Packages, tt.want) {
				t.Errorf("Packages:\ngot  %s\nwant %s", catalogtest.Dump(got.Packages), catalogtest.Dump(tt.want))
			}
			if !reflect.DeepEqual(got.Skipped, tt.skipped) {
				t.Errorf("Skipped:\ngot  %q\nwant %q", got.Skipped, tt.skipped)
			}
			if want := catalog.Digest([]byte(tt.index)); got.Digest != want {
				t.Errorf("Digest = %s, want %s", got.Digest, want)
			}
		})
	}
}

func TestParseHelmIndexErrors(t *testing.T) {
	tests := []struct {
		name    string
		index   string
		repoURL string
		wantErr string
	}{
		// Nothing to parse.
		{name: "empty", index: " \n", repoURL: repo, wantErr: "index.yaml is empty"},
		// Not YAML at all.
		{name: "not yaml", index: "apiVersion: v1\nentries: [", repoURL: repo, wantErr: "index.yaml is not a Helm repository index"},
		// YAML, but not a mapping.
		{name: "a list", index: "- a\n- b\n", repoURL: repo, wantErr: "index.yaml is not a Helm repository index"},
		// Helm refuses an index without apiVersion; so does Annex.
		{name: "no apiVersion", index: "entries: {}\n", repoURL: repo, wantErr: "index.yaml has no apiVersion"},
		// The repository URL itself is broken.
		{name: "bad repository url", index: "apiVersion: v1\n", repoURL: "http://[::1", wantErr: `repository URL "http://[::1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := helm.ParseIndex([]byte(tt.index), tt.repoURL, catalogRef)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestParseHelmIndexDeterministic parses the same content, written in two
// different orders, several times and expects identical results.
func TestParseHelmIndexDeterministic(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := helm.ParseIndex(data, repo, catalogRef)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Packages) < 3 || len(first.Skipped) == 0 {
		t.Fatalf("testdata/index.yaml should yield several packages and skipped entries, got %d and %d", len(first.Packages), len(first.Skipped))
	}
	for range 5 {
		again, err := helm.ParseIndex(data, repo, catalogRef)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("second parse differs:\n%s\n%s", catalogtest.Dump(first), catalogtest.Dump(again))
		}
	}

	reordered, err := os.ReadFile(filepath.Join("testdata", "index-reordered.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := helm.ParseIndex(reordered, repo, catalogRef)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first.Packages, other.Packages) {
		t.Fatalf("reordered index yields other packages:\n%s\n%s", catalogtest.Dump(first.Packages), catalogtest.Dump(other.Packages))
	}
}

func FuzzParseHelmIndex(f *testing.F) {
	for _, name := range []string{"index.yaml", "index-reordered.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, repo)
	}
	f.Fuzz(func(t *testing.T, data []byte, repoURL string) {
		index, err := helm.ParseIndex(data, repoURL, catalogRef)
		if err != nil {
			return
		}
		// Whatever the input, what comes out must be what the Extension
		// CRD accepts and the package documentation promises.
		for i, pkg := range index.Packages {
			if i > 0 && index.Packages[i-1].Name >= pkg.Name {
				t.Fatalf("packages not sorted: %q before %q", index.Packages[i-1].Name, pkg.Name)
			}
			if len(pkg.Spec.Versions) == 0 {
				t.Fatalf("package %q has no versions", pkg.Name)
			}
			for _, v := range pkg.Spec.Versions {
				if v.Source.URL == "" {
					t.Fatalf("package %q %s has no source URL", pkg.Name, v.Version)
				}
			}
		}
	})
}

// BenchmarkParseHelmIndex parses an index the size of a large public
// repository: 500 charts with 20 versions each.
func BenchmarkParseHelmIndex(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("apiVersion: v1\nentries:\n")
	for c := range 500 {
		fmt.Fprintf(&sb, "  chart-%d:\n", c)
		for v := range 20 {
			fmt.Fprintf(&sb, "  - apiVersion: v2\n    name: chart-%d\n    version: 1.%d.0\n    appVersion: \"1.%d\"\n    kubeVersion: \">=1.25.0-0\"\n    description: chart number %d\n    annotations:\n      annex.dev/dependencies: |\n        - name: base\n          version: \">=1.0.0\"\n    urls: [chart-%d-1.%d.0.tgz]\n    digest: %s\n", c, v, v, c, c, v, digestA)
		}
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		index, err := helm.ParseIndex(data, repo, catalogRef)
		if err != nil || len(index.Packages) != 500 {
			b.Fatalf("got %v, %v", index, err)
		}
	}
}
