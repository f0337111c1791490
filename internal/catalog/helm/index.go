package helm

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unsafe"

	"github.com/Masterminds/semver/v3"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
)

// indexEntry is the part of one index.yaml entry (Chart.yaml or
// operator.yaml metadata plus urls and digest) that Annex reads. Strings
// stay as written: a YAML scalar such as 1.10 decodes as "1.10", not as a
// number.
type indexEntry struct {
	Name        string            `yaml:"name"`
	Version     string            `yaml:"version"`
	AppVersion  string            `yaml:"appVersion"`
	KubeVersion string            `yaml:"kubeVersion"`
	Description string            `yaml:"description"`
	Home        string            `yaml:"home"`
	Icon        string            `yaml:"icon"`
	Keywords    []string          `yaml:"keywords"`
	Annotations map[string]string `yaml:"annotations"`
	Deprecated  bool              `yaml:"deprecated"`
	URLs        []string          `yaml:"urls"`
	Digest      string            `yaml:"digest"`

	// The fields of a package entry (see "Packages in a repository index"
	// in the package documentation).
	OperatorVersion   string          `yaml:"operatorVersion"`
	KubernetesVersion string          `yaml:"kubernetesVersion"`
	Extends           *PackageExtends `yaml:"extends"`
	Removed           bool            `yaml:"removed"`
}

// isPackage reports whether the entry is a package rather than a chart.
func (e *indexEntry) isPackage() bool { return e.OperatorVersion != "" }

// version is the entry's version: operatorVersion for a package.
func (e *indexEntry) version() string {
	if e.isPackage() {
		return e.OperatorVersion
	}
	return e.Version
}

// indexFile is index.yaml with each chart's entries kept as raw YAML, so
// that one malformed entry is skipped instead of failing the whole index.
type indexFile struct {
	APIVersion string               `yaml:"apiVersion"`
	Entries    map[string]yaml.Node `yaml:"entries"`
}

// parsedVersion is one accepted entry on its way into a Package.
type parsedVersion struct {
	semver *semver.Version
	entry  *indexEntry
	spec   v1alpha1.ExtensionVersion
}

var (
	hexDigest    = regexp.MustCompile(`^[a-fA-F0-9]{64}$`)
	versionRange = regexp.MustCompile(v1alpha1.VersionRangePattern)
	// strictVersion is what the Extension API accepts as a version.
	strictVersion = regexp.MustCompile(v1alpha1.VersionPattern)
)

// ParseIndex parses a Helm repository index.yaml into an Index, following
// the mapping in the package documentation. repoURL is the repository's base
// URL and resolves relative chart URLs; catalogName goes into every version's
// Source.Catalog.
//
// It returns an error only when the file as a whole is unusable (empty, not
// YAML, no apiVersion); a malformed entry is skipped and listed in
// Index.Skipped. The result depends only on the arguments.
//
// Most indexes are read by a fast decoder of the block subset of YAML that
// index generators write; anything outside it (anchors, tags, multi-line
// plain scalars, ...) is read by yaml.v3 with the same result.
func ParseIndex(data []byte, repoURL, catalogName string) (*catalog.Index, error) {
	base, err := url.Parse(repoURL)
	if err != nil {
		return nil, fmt.Errorf("repository URL %q: %w", repoURL, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("index.yaml is empty")
	}
	// The fast decoder copies what it keeps, so it may read data in place.
	apiVersion, charts, err := decodeIndexFast(unsafe.String(unsafe.SliceData(data), len(data)))
	if err != nil {
		if apiVersion, charts, err = decodeIndexSlow(data); err != nil {
			return nil, err
		}
	}
	if apiVersion == "" {
		return nil, errors.New(`index.yaml has no apiVersion; a Helm repository index starts with "apiVersion: v1"`)
	}

	index := &catalog.Index{Digest: catalog.Digest(data)}
	sort.Slice(charts, func(i, j int) bool { return charts[i].name < charts[j].name })
	cache := newParseCache()
	for i := range charts {
		pkg, skipped := parseChart(&charts[i], base, catalogName, cache)
		index.Skipped = append(index.Skipped, skipped...)
		if pkg != nil {
			index.Packages = append(index.Packages, *pkg)
		}
	}
	return index, nil
}

// IndexFromEntries writes entries (chart or package name → the fields of
// its index entries: Chart.yaml or operator.yaml metadata plus urls and
// digest) as a repository index and parses it with ParseIndex, so that
// every source kind is validated, sanitised and mapped by the same code.
func IndexFromEntries(entries map[string][]map[string]any, repoURL, catalogName string) (*catalog.Index, error) {
	if entries == nil {
		entries = map[string][]map[string]any{}
	}
	data, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": entries})
	if err != nil {
		return nil, fmt.Errorf("catalog %q: %w", catalogName, err)
	}
	return ParseIndex(data, repoURL, catalogName)
}

// rawChart is one key of entries after decoding, before validation.
type rawChart struct {
	name string
	// problem, when set, makes the whole chart unusable.
	problem string
	entries []rawEntry
}

// rawEntry is one decoded entry, or the reason it could not be decoded.
type rawEntry struct {
	entry   indexEntry
	problem string
}

// decodeIndexSlow decodes index.yaml with yaml.v3, one chart and one entry at
// a time so that a malformed entry costs only itself.
func decodeIndexSlow(data []byte) (string, []rawChart, error) {
	var file indexFile
	if err := yaml.Unmarshal(data, &file); err != nil {
		return "", nil, fmt.Errorf("index.yaml is not a Helm repository index: %w", err)
	}
	charts := make([]rawChart, 0, len(file.Entries))
	for name, node := range file.Entries {
		c := rawChart{name: name}
		var nodes []yaml.Node
		if n := resolveAlias(&node); n.Kind != yaml.SequenceNode && !isNull(n) {
			c.problem = fmt.Sprintf("entry %q: must be a list of chart versions (line %d)", name, n.Line)
		} else if err := node.Decode(&nodes); err != nil {
			c.problem = fmt.Sprintf("entry %q: %s", name, catalog.YAMLReason(err))
		}
		for i := range nodes {
			var e rawEntry
			if n := resolveAlias(&nodes[i]); n.Kind != yaml.MappingNode {
				e.problem = fmt.Sprintf("must be a mapping of chart fields (line %d)", n.Line)
			} else if err := nodes[i].Decode(&e.entry); err != nil {
				e.problem = catalog.YAMLReason(err)
			}
			c.entries = append(c.entries, e)
		}
		charts = append(charts, c)
	}
	return file.APIVersion, charts, nil
}

// parseCache remembers the checks that repeat across the entries of one
// index: the same kubeVersion range and dependency annotation appear in
// thousands of entries of a large repository.
type parseCache struct {
	ranges map[string]error
	deps   map[depsKey]depsResult
}

type depsKey struct{ chart, annotation string }

type depsResult struct {
	deps []v1alpha1.Dependency
	err  error
}

func newParseCache() *parseCache {
	return &parseCache{ranges: map[string]error{}, deps: map[depsKey]depsResult{}}
}

func (c *parseCache) checkRange(r string) error {
	if r == "" {
		return nil
	}
	err, ok := c.ranges[r]
	if !ok {
		err = checkRange(r)
		c.ranges[r] = err
	}
	return err
}

func (c *parseCache) dependencies(chart, annotation string) ([]v1alpha1.Dependency, error) {
	if strings.TrimSpace(annotation) == "" {
		return nil, nil
	}
	k := depsKey{chart, annotation}
	r, ok := c.deps[k]
	if !ok {
		r.deps, r.err = parseDependencies(chart, annotation)
		c.deps[k] = r
	}
	// Each version gets its own slice: callers may change one version.
	return slices.Clone(r.deps), r.err
}

// parseChart turns the entries of one chart into a Package, or nil when none
// of them is usable, plus one line per skipped entry.
func parseChart(c *rawChart, base *url.URL, catalogName string, cache *parseCache) (*catalog.Package, []string) {
	name := c.name
	if c.problem != "" {
		return nil, []string{c.problem}
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, []string{fmt.Sprintf("entry %q: name is not a valid Kubernetes object name (%s); rename the chart", name, strings.Join(errs, "; "))}
	}

	var skipped []string
	versions := make([]parsedVersion, 0, len(c.entries))
	seen := make(map[string]bool, len(c.entries))
	for i := range c.entries {
		raw := &c.entries[i]
		if raw.problem != "" {
			skipped = append(skipped, fmt.Sprintf("entry %q #%d: %s", name, i+1, raw.problem))
			continue
		}
		entry := &raw.entry
		v, err := parseEntry(name, entry, base, catalogName, cache)
		if err != nil {
			label := fmt.Sprintf("entry %q %s", name, entry.version())
			if entry.version() == "" {
				label = fmt.Sprintf("entry %q #%d", name, i+1)
			}
			skipped = append(skipped, label+": "+err.Error())
			continue
		}
		// Duplicates compare the normalised version, so that "v1.0.0" and
		// "1.0.0" do not become two versions a resolver cannot tell apart.
		key := v.semver.String()
		if seen[key] {
			skipped = append(skipped, fmt.Sprintf("entry %q %s: duplicate version; the first entry is kept", name, entry.version()))
			continue
		}
		seen[key] = true
		versions = append(versions, v)
	}
	if len(versions) == 0 {
		return nil, skipped
	}

	sort.SliceStable(versions, func(i, j int) bool {
		if c := versions[i].semver.Compare(versions[j].semver); c != 0 {
			return c > 0
		}
		// Equal precedence (differing only in build metadata): order by text.
		return versions[i].spec.Version < versions[j].spec.Version
	})
	top := versions[0].entry
	pkg := &catalog.Package{Name: name, Spec: v1alpha1.ExtensionSpec{
		DisplayName: catalog.CleanText(top.Annotations[v1alpha1.AnnotationDisplayName]),
		Description: catalog.CleanText(top.Description),
		Icon:        catalog.CleanText(top.Icon),
		Home:        catalog.CleanText(top.Home),
	}}
	for _, k := range top.Keywords {
		if k = catalog.CleanText(k); k != "" {
			pkg.Spec.Keywords = append(pkg.Spec.Keywords, k)
		}
	}
	if pkg.Spec.DisplayName == "" {
		pkg.Spec.DisplayName = name
	}
	pkg.Spec.Versions = make([]v1alpha1.ExtensionVersion, len(versions))
	for i, v := range versions {
		pkg.Spec.Versions[i] = v.spec
	}
	return pkg, skipped
}

// parseEntry checks one entry of chart name and maps it onto an
// ExtensionVersion. The error is the reason the entry is skipped.
func parseEntry(name string, e *indexEntry, base *url.URL, catalogName string, cache *parseCache) (parsedVersion, error) {
	switch {
	case e.Name == "":
		return parsedVersion{}, errors.New("has no name")
	case e.Name != name:
		return parsedVersion{}, fmt.Errorf("name %q differs from its key %q in entries", e.Name, name)
	case e.isPackage() && e.Version != "" && e.Version != e.OperatorVersion:
		return parsedVersion{}, fmt.Errorf("sets version %q and operatorVersion %q; a package entry has only operatorVersion", e.Version, e.OperatorVersion)
	case !e.isPackage() && e.Extends != nil:
		return parsedVersion{}, errors.New("sets extends but no operatorVersion; only packages extend a base, and a package entry has operatorVersion")
	case e.version() == "":
		return parsedVersion{}, errors.New("has no version (a chart) or operatorVersion (a package)")
	}
	ver := e.version()
	sv, err := semver.NewVersion(ver)
	if err != nil || !strictVersion.MatchString(ver) || len(ver) > 128 {
		if e.isPackage() {
			return parsedVersion{}, errors.New("operatorVersion is not semver (major.minor.patch)")
		}
		return parsedVersion{}, errors.New("version is not semver (major.minor.patch)")
	}
	kubeVersion, err := entryKubeVersion(e, cache)
	if err != nil {
		return parsedVersion{}, err
	}
	deps, err := cache.dependencies(name, e.Annotations[v1alpha1.AnnotationDependencies])
	if err != nil {
		return parsedVersion{}, fmt.Errorf("annotation %s: %v", v1alpha1.AnnotationDependencies, err)
	}
	var extends *v1alpha1.Dependency
	if e.Extends != nil {
		if extends, err = parseExtends(name, e.Extends, cache); err != nil {
			return parsedVersion{}, err
		}
	}
	if len(e.URLs) == 0 || e.URLs[0] == "" {
		return parsedVersion{}, errors.New("has no urls")
	}
	if catalog.HasControl(e.URLs[0]) {
		return parsedVersion{}, fmt.Errorf("url %q contains control characters; a chart URL must be plain text", e.URLs[0])
	}
	src, err := resolveChartURL(base, e.URLs[0])
	if err != nil {
		return parsedVersion{}, err
	}

	spec := v1alpha1.ExtensionVersion{
		Version:      ver,
		AppVersion:   catalog.CleanText(e.AppVersion),
		KubeVersion:  kubeVersion,
		Dependencies: deps,
		Extends:      extends,
		Source:       v1alpha1.ArtifactSource{Catalog: catalogName, URL: src},
		Deprecated:   e.Deprecated || e.Removed,
	}
	if e.isPackage() {
		spec.Engine = v1alpha1.EnginePackage
	}
	digest := strings.TrimPrefix(e.Digest, "sha256:")
	if hexDigest.MatchString(digest) {
		spec.Source.Digest = "sha256:" + strings.ToLower(digest)
	}
	return parsedVersion{semver: sv, entry: e, spec: spec}, nil
}

// entryKubeVersion is the entry's kubeVersion range. A package without one
// gets ">=<kubernetesVersion>": KUDO's kubernetesVersion is the lowest
// Kubernetes version the package supports.
func entryKubeVersion(e *indexEntry, cache *parseCache) (string, error) {
	if e.KubeVersion != "" || !e.isPackage() || e.KubernetesVersion == "" {
		if err := cache.checkRange(e.KubeVersion); err != nil {
			return "", fmt.Errorf("kubeVersion %q is not a version range: %v", e.KubeVersion, err)
		}
		return e.KubeVersion, nil
	}
	lowest := strings.TrimSpace(e.KubernetesVersion)
	if _, err := semver.NewVersion(lowest); err != nil || strings.ContainsAny(lowest, " ,|") {
		return "", fmt.Errorf("kubernetesVersion %q is not a version; it is the lowest Kubernetes version the package supports, such as 1.28.0 (write a range in kubeVersion instead)", e.KubernetesVersion)
	}
	r := ">=" + lowest
	if err := cache.checkRange(r); err != nil {
		return "", fmt.Errorf("kubernetesVersion %q does not make a version range: %v", e.KubernetesVersion, err)
	}
	return r, nil
}

// parseExtends checks the base package an entry of package name extends.
func parseExtends(name string, x *PackageExtends, cache *parseCache) (*v1alpha1.Dependency, error) {
	base, version, err := x.base()
	switch {
	case err != nil:
		return nil, err
	case base == "":
		return nil, errors.New("extends has no operator; set extends.operator to the base package's name")
	case len(validation.IsDNS1123Subdomain(base)) > 0:
		return nil, fmt.Errorf("extends.operator %q is not a valid extension name", base)
	case base == name:
		return nil, fmt.Errorf("extends.operator %q: a package cannot extend itself", base)
	}
	if err := cache.checkRange(version); err != nil {
		return nil, fmt.Errorf("extends.version %q is not a version range: %v", version, err)
	}
	return &v1alpha1.Dependency{Name: base, Version: version}, nil
}

// checkRange accepts an empty range (any version) or one that both
// Masterminds semver and the Extension CRD's validation pattern accept, so
// that a range which parses here is never refused by the API server.
func checkRange(r string) error {
	if r == "" {
		return nil
	}
	if _, err := semver.NewConstraint(r); err != nil {
		return err
	}
	if !versionRange.MatchString(r) {
		return errors.New("use operators such as >=, <, ~, ^ with versions such as 1.28.0")
	}
	return nil
}

// parseDependencies reads the annex.dev/dependencies annotation of chart
// name: a YAML list of {name, version}. Unknown keys are refused so that a
// typo ("versions") is reported instead of silently meaning "any version".
func parseDependencies(name, annotation string) ([]v1alpha1.Dependency, error) {
	if strings.TrimSpace(annotation) == "" {
		return nil, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(annotation), &doc); err != nil {
		return nil, fmt.Errorf("is not YAML: %s", catalog.YAMLReason(err))
	}
	list := &doc
	if list.Kind == yaml.DocumentNode && len(list.Content) == 1 {
		list = list.Content[0]
	}
	if list = resolveAlias(list); list.Kind != yaml.SequenceNode {
		return nil, errors.New("must be a YAML list of {name, version}")
	}
	var deps []v1alpha1.Dependency
	seen := map[string]bool{}
	for i, node := range list.Content {
		var item map[string]string
		if n := resolveAlias(node); n.Kind != yaml.MappingNode || n.Decode(&item) != nil {
			return nil, fmt.Errorf("item %d must be a mapping {name, version} of strings", i+1)
		}
		for _, key := range sortedKeys(item) {
			if key != "name" && key != "version" {
				return nil, fmt.Errorf("item %d: unknown key %q; an item has only name and version", i+1, key)
			}
		}
		dep := v1alpha1.Dependency{Name: item["name"], Version: item["version"]}
		switch {
		case dep.Name == "":
			return nil, fmt.Errorf("item %d has no name", i+1)
		case len(validation.IsDNS1123Subdomain(dep.Name)) > 0:
			return nil, fmt.Errorf("item %d: name %q is not a valid extension name", i+1, dep.Name)
		case dep.Name == name:
			return nil, fmt.Errorf("item %d: %q depends on itself", i+1, dep.Name)
		case seen[dep.Name]:
			return nil, fmt.Errorf("item %d: %q is listed twice; merge the ranges into one item", i+1, dep.Name)
		}
		if err := checkRange(dep.Version); err != nil {
			return nil, fmt.Errorf("item %d (%s): version %q is not a version range: %v", i+1, dep.Name, dep.Version, err)
		}
		seen[dep.Name] = true
		deps = append(deps, dep)
	}
	return deps, nil
}

// resolveChartURL resolves a chart URL from the index against the
// repository URL, the way Helm does: a relative URL is relative to the
// repository's directory even without a trailing slash, and inherits the
// repository URL's query (some repositories sign URLs with one).
func resolveChartURL(base *url.URL, ref string) (string, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("url %q: %v", ref, err)
	}
	if u.IsAbs() {
		return ref, nil
	}
	if !base.IsAbs() {
		return "", fmt.Errorf("url %q is relative and the repository URL %q is not absolute", ref, base.Redacted())
	}
	dir := *base
	dir.Path = strings.TrimSuffix(dir.Path, "/") + "/"
	dir.RawPath = ""
	resolved := dir.ResolveReference(u)
	if u.RawQuery == "" {
		resolved.RawQuery = base.RawQuery
	}
	return resolved.String(), nil
}

// resolveAlias follows YAML aliases (*x) to the node they stand for.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
