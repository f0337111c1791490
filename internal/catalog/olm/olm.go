package olm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/archive"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/oci"
)

// File-Based Catalog schemas and property types Annex reads.
const (
	fbcSchemaPackage      = "olm.package"
	fbcSchemaChannel      = "olm.channel"
	fbcSchemaBundle       = "olm.bundle"
	fbcSchemaDeprecations = "olm.deprecations"

	fbcPropPackage     = "olm.package"
	fbcPropGVK         = "olm.gvk"
	fbcPropGVKRequired = "olm.gvk.required"
	fbcPropPkgRequired = "olm.package.required"
	fbcPropCSVMetadata = "olm.csv.metadata"
	fbcPropObject      = "olm.bundle.object"
)

// BundleScheme is the URL scheme of a bundle whose manifests live inline
// in its catalog (olm.bundle.object properties):
// olm://<catalog>/<package>/<bundle name>, each path segment escaped with
// url.PathEscape. FetchBundle serves it.
const BundleScheme = "olm"

// olmConfigsLabel names the folder of a catalog image holding its FBC.
const olmConfigsLabel = "operators.operatorframework.io.index.configs.v1"

var (
	// strictVersion is what the Extension API accepts as a version.
	strictVersion = regexp.MustCompile(v1alpha1.VersionPattern)
	versionRange  = regexp.MustCompile(v1alpha1.VersionRangePattern)
)

// fbcBlob is every field of the four schemas Annex reads; the schema says
// which apply. encoding/json matches keys case-insensitively, as opm's
// Meta does for schema, package and name.
type fbcBlob struct {
	Schema  string `json:"schema"`
	Package string `json:"package"`
	Name    string `json:"name"`

	// olm.package
	DefaultChannel string   `json:"defaultChannel"`
	Description    string   `json:"description"`
	Icon           *fbcIcon `json:"icon"`

	// olm.channel and olm.deprecations
	Entries []fbcEntry `json:"entries"`

	// olm.bundle
	Image      string        `json:"image"`
	Properties []fbcProperty `json:"properties"`
}

type fbcIcon struct {
	Data      string `json:"base64data"`
	MediaType string `json:"mediatype"`
}

// fbcEntry is a channel entry or a deprecation entry.
type fbcEntry struct {
	Name      string        `json:"name"`
	Replaces  string        `json:"replaces"`
	Skips     []string      `json:"skips"`
	SkipRange string        `json:"skipRange"`
	Reference *fbcReference `json:"reference"`
	Message   string        `json:"message"`
}

type fbcReference struct {
	Schema string `json:"schema"`
	Name   string `json:"name"`
}

type fbcProperty struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

type fbcGVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func (g fbcGVK) String() string {
	if g.Group == "" {
		return g.Version + "/" + g.Kind
	}
	return g.Group + "/" + g.Version + "/" + g.Kind
}

// csvFacts is what Annex reads from a ClusterServiceVersion, inline or as
// its olm.csv.metadata property.
type csvFacts struct {
	DisplayName    string           `json:"displayName"`
	Keywords       []string         `json:"keywords"`
	MinKubeVersion string           `json:"minKubeVersion"`
	InstallModes   []csvInstallMode `json:"installModes"`
	CRDs           struct {
		Owned    []csvCRD `json:"owned"`
		Required []csvCRD `json:"required"`
	} `json:"customresourcedefinitions"`
	APIServices struct {
		Owned    []fbcGVK `json:"owned"`
		Required []fbcGVK `json:"required"`
	} `json:"apiservicedefinitions"`
}

// csvCRD is an owned or required CRD of a CSV: name is <plural>.<group>.
type csvCRD struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// gvk is the CRD's API as "group/version/Kind"; "" when the name has no
// group or version or kind is missing.
func (c csvCRD) gvk() string {
	_, group, ok := strings.Cut(c.Name, ".")
	if !ok || group == "" || c.Version == "" || c.Kind == "" {
		return ""
	}
	return fbcGVK{Group: group, Version: c.Version, Kind: c.Kind}.String()
}

type csvInstallMode struct {
	Type      string `json:"type"`
	Supported bool   `json:"supported"`
}

// csvObject is the part of an inline manifest Annex reads.
type csvObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec csvFacts `json:"spec"`
}

// olmBundle is one accepted olm.bundle on its way into a version.
type olmBundle struct {
	name, image string
	version     *semver.Version
	raw         string
	owned, req  []string
	reqPackages []v1alpha1.Dependency
	csv         *csvFacts
	objects     int
}

// olmPackage collects the blobs of one package, in any order.
type olmPackage struct {
	pkg          *fbcBlob
	bundles      map[string]*olmBundle
	channels     []fbcBlob
	deprecations []fbcEntry
}

// olmParser turns FBC documents into packages. With want set it only keeps
// the inline manifests of that one bundle (FetchBundle).
type olmParser struct {
	packages map[string]*olmPackage
	skipped  []string
	others   int

	want    *olmBundleRef
	objects [][]byte
	found   bool
}

type olmBundleRef struct{ pkg, name string }

func newOLMParser() *olmParser { return &olmParser{packages: map[string]*olmPackage{}} }

func (p *olmParser) packageOf(name string) *olmPackage {
	op := p.packages[name]
	if op == nil {
		op = &olmPackage{bundles: map[string]*olmBundle{}}
		p.packages[name] = op
	}
	return op
}

// parseStream reads one file or stream of JSON or YAML documents. A
// document that is not JSON or YAML ends the file, which is listed in
// skipped; blobs read before it stay.
func (p *olmParser) parseStream(file string, r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	first := firstNonSpace(br)
	if first == 0 {
		return
	}
	n := 0
	if first == '{' {
		dec := json.NewDecoder(br)
		for ; ; n++ {
			var b fbcBlob
			err := dec.Decode(&b)
			if errors.Is(err, io.EOF) {
				return
			}
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				p.skip(&b, fmt.Sprintf("field %s: must be %s, not %s", te.Field, te.Type, te.Value))
				continue
			}
			if err != nil {
				p.skipped = append(p.skipped, fmt.Sprintf("file %s: document %d and after: not JSON: %v", file, n+1, err))
				return
			}
			p.add(&b)
		}
	}
	dec := yaml.NewDecoder(br)
	for ; ; n++ {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			p.skipped = append(p.skipped, fmt.Sprintf("file %s: document %d and after: not YAML: %s", file, n+1, catalog.YAMLReason(err)))
			return
		}
		if v == nil {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			p.skipped = append(p.skipped, fmt.Sprintf("file %s: document %d: %v", file, n+1, err))
			continue
		}
		var b fbcBlob
		if err := json.Unmarshal(raw, &b); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				p.skip(&b, fmt.Sprintf("field %s: must be %s, not %s", te.Field, te.Type, te.Value))
			} else {
				p.skipped = append(p.skipped, fmt.Sprintf("file %s: document %d: %v", file, n+1, err))
			}
			continue
		}
		p.add(&b)
	}
}

// firstNonSpace peeks at the first byte that is not white space; 0 at EOF.
func firstNonSpace(br *bufio.Reader) byte {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			_ = br.UnreadByte()
			return c
		}
	}
}

// skip lists a malformed blob, naming its schema, package and name.
func (p *olmParser) skip(b *fbcBlob, reason string) {
	p.skipped = append(p.skipped, fmt.Sprintf("%s package %q name %q: %s", b.Schema, b.Package, b.Name, reason))
}

// add files one decoded blob under its package.
func (p *olmParser) add(b *fbcBlob) {
	switch b.Schema {
	case fbcSchemaPackage:
		if b.Name == "" {
			p.skip(b, "field name: is empty")
			return
		}
		if p.want != nil {
			return
		}
		op := p.packageOf(b.Name)
		if op.pkg != nil {
			p.skip(b, "appears twice; the first olm.package blob counts")
			return
		}
		b.Entries, b.Properties = nil, nil
		op.pkg = b
	case fbcSchemaChannel:
		if b.Package == "" || b.Name == "" {
			p.skip(b, "fields package and name: must be set")
			return
		}
		if p.want == nil {
			op := p.packageOf(b.Package)
			op.channels = append(op.channels, fbcBlob{Name: b.Name, Entries: b.Entries})
		}
	case fbcSchemaBundle:
		if p.want != nil {
			if b.Package == p.want.pkg && b.Name == p.want.name {
				p.keepObjects(b)
			}
			return
		}
		if b.Package == "" || b.Name == "" {
			p.skip(b, "fields package and name: must be set")
			return
		}
		bundle, reason := parseBundle(b)
		if reason != "" {
			p.skip(b, reason)
			return
		}
		op := p.packageOf(b.Package)
		if op.bundles[b.Name] != nil {
			p.skip(b, "appears twice; the first olm.bundle blob counts")
			return
		}
		op.bundles[b.Name] = bundle
	case fbcSchemaDeprecations:
		if b.Package == "" {
			p.skip(b, "field package: is empty")
			return
		}
		if p.want == nil {
			op := p.packageOf(b.Package)
			op.deprecations = append(op.deprecations, b.Entries...)
		}
	default:
		p.others++
	}
}

// keepObjects decodes the inline manifests of the wanted bundle.
func (p *olmParser) keepObjects(b *fbcBlob) {
	p.found = true
	for _, prop := range b.Properties {
		if prop.Type != fbcPropObject {
			continue
		}
		data, err := decodeObject(prop.Value)
		if err != nil {
			continue // the index skipped such a bundle already
		}
		p.objects = append(p.objects, data)
	}
}

// decodeObject returns the manifest of an olm.bundle.object value.
func decodeObject(value json.RawMessage) ([]byte, error) {
	// opm writes {"data": "<base64>"}; base64 needs no escapes, so such a
	// value is read without a JSON pass over the (large) string.
	if b64 := plainDataString(value); b64 != nil {
		out := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
		n, err := base64.StdEncoding.Decode(out, b64)
		return out[:n], err
	}
	var v struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(value, &v); err != nil {
		return nil, err
	}
	if v.Data == "" {
		return nil, errors.New("data is empty")
	}
	return base64.StdEncoding.DecodeString(v.Data)
}

// plainDataString returns s of a value that is exactly {"data": "s"}
// (any white space) with no escapes in s; nil for anything else.
func plainDataString(v []byte) []byte {
	expect := func(tok string) bool {
		v = bytes.TrimLeft(v, " \t\r\n")
		var ok bool
		v, ok = bytes.CutPrefix(v, []byte(tok))
		return ok
	}
	if !expect("{") || !expect(`"data"`) || !expect(":") || !expect(`"`) {
		return nil
	}
	end := bytes.IndexAny(v, "\"\\")
	if end <= 0 || v[end] != '"' {
		return nil
	}
	s := v[:end]
	v = v[end+1:]
	if !expect("}") || len(bytes.TrimSpace(v)) != 0 {
		return nil
	}
	return s
}

// parseBundle reads a bundle's properties; a non-empty reason means the
// bundle is skipped and says which field is wrong.
func parseBundle(b *fbcBlob) (*olmBundle, string) {
	out := &olmBundle{name: b.Name, image: b.Image}
	var meta *csvFacts
	for i, prop := range b.Properties {
		field := fmt.Sprintf("properties[%d] %s", i, prop.Type)
		switch prop.Type {
		case fbcPropPackage:
			var v struct {
				PackageName string `json:"packageName"`
				Version     string `json:"version"`
			}
			if err := json.Unmarshal(prop.Value, &v); err != nil {
				return nil, fmt.Sprintf("%s: %v", field, err)
			}
			if v.PackageName != b.Package {
				return nil, fmt.Sprintf("%s: packageName %q is not the blob's package", field, v.PackageName)
			}
			if !strictVersion.MatchString(v.Version) {
				return nil, fmt.Sprintf("%s: version %q is not semver (major.minor.patch)", field, v.Version)
			}
			sv, err := semver.NewVersion(v.Version)
			if err != nil {
				return nil, fmt.Sprintf("%s: version %q: %v", field, v.Version, err)
			}
			out.version, out.raw = sv, v.Version
		case fbcPropGVK, fbcPropGVKRequired:
			var g fbcGVK
			if err := json.Unmarshal(prop.Value, &g); err != nil || g.Version == "" || g.Kind == "" {
				return nil, fmt.Sprintf("%s: must be {group, version, kind} with version and kind set", field)
			}
			if prop.Type == fbcPropGVK {
				out.owned = append(out.owned, g.String())
			} else {
				out.req = append(out.req, g.String())
			}
		case fbcPropPkgRequired:
			var v struct {
				PackageName  string `json:"packageName"`
				VersionRange string `json:"versionRange"`
			}
			if err := json.Unmarshal(prop.Value, &v); err != nil || v.PackageName == "" {
				return nil, fmt.Sprintf("%s: must be {packageName, versionRange} with packageName set", field)
			}
			if v.VersionRange != "" && !versionRange.MatchString(v.VersionRange) {
				return nil, fmt.Sprintf("%s: versionRange %q is not a version range (such as \">=1.2.0 <2.0.0\")", field, v.VersionRange)
			}
			out.reqPackages = append(out.reqPackages, v1alpha1.Dependency{Name: v.PackageName, Version: v.VersionRange})
		case fbcPropCSVMetadata:
			meta = &csvFacts{}
			if err := json.Unmarshal(prop.Value, meta); err != nil {
				return nil, fmt.Sprintf("%s: %v", field, err)
			}
		case fbcPropObject:
			data, err := decodeObject(prop.Value)
			if err != nil {
				return nil, fmt.Sprintf("%s: value.data must be a base64 manifest: %v", field, err)
			}
			var obj csvObject
			if err := unmarshalManifest(data, &obj); err != nil {
				return nil, fmt.Sprintf("%s: not a JSON or YAML manifest: %v", field, err)
			}
			out.objects++
			if obj.Kind == "ClusterServiceVersion" {
				csv := obj.Spec
				out.csv = &csv
			}
		}
	}
	if out.version == nil {
		return nil, "properties: no olm.package property with the bundle's version"
	}
	if out.csv == nil {
		out.csv = meta
	}
	if out.csv != nil {
		// A CSV's CRDs are its APIs too when no olm.gvk property lists them.
		for _, c := range out.csv.CRDs.Owned {
			if g := c.gvk(); g != "" && !slices.Contains(out.owned, g) {
				out.owned = append(out.owned, g)
			}
		}
		for _, c := range out.csv.CRDs.Required {
			if g := c.gvk(); g != "" && !slices.Contains(out.req, g) {
				out.req = append(out.req, g)
			}
		}
		// So are the aggregated APIs it serves or needs (APIServices).
		for _, a := range out.csv.APIServices.Owned {
			if g := a.String(); a.Group != "" && a.Version != "" && a.Kind != "" && !slices.Contains(out.owned, g) {
				out.owned = append(out.owned, g)
			}
		}
		for _, a := range out.csv.APIServices.Required {
			if g := a.String(); a.Group != "" && a.Version != "" && a.Kind != "" && !slices.Contains(out.req, g) {
				out.req = append(out.req, g)
			}
		}
	}
	if out.image == "" && out.objects == 0 {
		return nil, "field image: is empty and the bundle has no olm.bundle.object properties; Annex cannot fetch it"
	}
	return out, ""
}

// unmarshalManifest decodes a JSON or YAML manifest.
func unmarshalManifest(data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return json.Unmarshal(trimmed, v)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// index turns the collected packages into an Index, following the mapping
// in Index's documentation.
func (p *olmParser) index(catalogName, digest string) *catalog.Index {
	index := &catalog.Index{Digest: digest, OtherBlobs: p.others}
	names := make([]string, 0, len(p.packages))
	for name := range p.packages {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		pkg, skipped := buildOLMPackage(name, p.packages[name], catalogName)
		index.Skipped = append(index.Skipped, skipped...)
		if pkg != nil {
			index.Packages = append(index.Packages, *pkg)
		}
	}
	index.Skipped = append(p.skipped, index.Skipped...)
	return index
}

func buildOLMPackage(name string, op *olmPackage, catalogName string) (*catalog.Package, []string) {
	if op.pkg == nil {
		return nil, []string{fmt.Sprintf("package %q: has bundles or channels but no olm.package blob", name)}
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, []string{fmt.Sprintf("olm.package name %q: not a valid Extension name: %s", name, strings.Join(errs, "; "))}
	}
	var skipped []string
	// Deprecations.
	pkgDeprecated := false
	deprecatedChannels := map[string]bool{}
	deprecatedBundles := map[string]bool{}
	for i, d := range op.deprecations {
		switch {
		case d.Reference == nil:
			skipped = append(skipped, fmt.Sprintf("olm.deprecations package %q: entries[%d].reference: is missing", name, i))
		case d.Reference.Schema == fbcSchemaPackage:
			pkgDeprecated = true
		case d.Reference.Schema == fbcSchemaChannel:
			deprecatedChannels[d.Reference.Name] = true
		case d.Reference.Schema == fbcSchemaBundle:
			deprecatedBundles[d.Reference.Name] = true
		default:
			skipped = append(skipped, fmt.Sprintf("olm.deprecations package %q: entries[%d].reference.schema %q: must be olm.package, olm.channel or olm.bundle", name, i, d.Reference.Schema))
		}
	}
	// Versions, one per bundle; the same version twice keeps the first
	// bundle by name.
	bundleNames := make([]string, 0, len(op.bundles))
	for bn := range op.bundles {
		bundleNames = append(bundleNames, bn)
	}
	sort.Strings(bundleNames)
	versionOf := map[string]string{}
	byVersion := map[string]string{}
	for _, bn := range bundleNames {
		b := op.bundles[bn]
		if other, dup := byVersion[b.raw]; dup {
			skipped = append(skipped, fmt.Sprintf("olm.bundle package %q name %q: version %s is also bundle %q's; the first by name counts", name, bn, b.raw, other))
			delete(op.bundles, bn)
			continue
		}
		byVersion[b.raw], versionOf[bn] = bn, b.raw
	}
	// Channels, in the order of their names.
	channelEntries := map[string][]v1alpha1.ChannelEntry{}
	slices.SortFunc(op.channels, func(a, b fbcBlob) int { return strings.Compare(a.Name, b.Name) })
	for _, ch := range op.channels {
		for i, e := range ch.Entries {
			if _, ok := op.bundles[e.Name]; !ok {
				if e.Name == "" {
					skipped = append(skipped, fmt.Sprintf("olm.channel package %q name %q: entries[%d].name: is empty", name, ch.Name, i))
				}
				continue // a bundle skipped above, or not in this catalog
			}
			if e.SkipRange != "" && !versionRange.MatchString(e.SkipRange) {
				skipped = append(skipped, fmt.Sprintf("olm.channel package %q name %q: entries[%d].skipRange %q: not a version range; the edge is left out", name, ch.Name, i, e.SkipRange))
				e.SkipRange = ""
			}
			entry := v1alpha1.ChannelEntry{
				Name:       ch.Name,
				Replaces:   versionOf[e.Replaces],
				SkipRange:  e.SkipRange,
				Deprecated: deprecatedChannels[ch.Name],
			}
			for _, s := range e.Skips {
				if v, ok := versionOf[s]; ok {
					entry.Skips = append(entry.Skips, v)
				}
			}
			channelEntries[e.Name] = append(channelEntries[e.Name], entry)
		}
	}
	type versioned struct {
		sv   *semver.Version
		b    *olmBundle
		spec v1alpha1.ExtensionVersion
	}
	versions := make([]versioned, 0, len(op.bundles))
	for bn, b := range op.bundles {
		spec := v1alpha1.ExtensionVersion{
			Version:    b.raw,
			Engine:     v1alpha1.EngineBundle,
			Deprecated: pkgDeprecated || deprecatedBundles[bn],
			Channels:   channelEntries[bn],
			Source:     v1alpha1.ArtifactSource{Catalog: catalogName, URL: bundleURL(catalogName, name, b)},
		}
		op := &v1alpha1.OperatorInfo{OwnedAPIs: b.owned, RequiredAPIs: b.req, RequiredPackages: b.reqPackages}
		if b.csv != nil {
			for _, m := range b.csv.InstallModes {
				if m.Supported {
					op.InstallModes = append(op.InstallModes, m.Type)
				}
			}
			if mk := strings.TrimSpace(b.csv.MinKubeVersion); mk != "" {
				if r := ">=" + mk; versionRange.MatchString(r) {
					spec.KubeVersion = r
				} else {
					skipped = append(skipped, fmt.Sprintf("olm.bundle package %q name %q: ClusterServiceVersion spec.minKubeVersion %q: not a version; left out", name, bn, mk))
				}
			}
		}
		if len(op.InstallModes) > 0 || len(op.OwnedAPIs) > 0 || len(op.RequiredAPIs) > 0 || len(op.RequiredPackages) > 0 {
			spec.Operator = op
		}
		versions = append(versions, versioned{sv: b.version, b: b, spec: spec})
	}
	if len(versions) == 0 {
		return nil, append(skipped, fmt.Sprintf("package %q: has no usable bundles", name))
	}
	sort.Slice(versions, func(i, j int) bool {
		if c := versions[i].sv.Compare(versions[j].sv); c != 0 {
			return c > 0
		}
		return versions[i].spec.Version < versions[j].spec.Version
	})
	pkg := &catalog.Package{Name: name, Spec: v1alpha1.ExtensionSpec{
		Description:    op.pkg.Description,
		DefaultChannel: op.pkg.DefaultChannel,
	}}
	if ic := op.pkg.Icon; ic != nil && ic.Data != "" && ic.MediaType != "" {
		pkg.Spec.Icon = "data:" + ic.MediaType + ";base64," + ic.Data
	}
	if csv := versions[0].b.csv; csv != nil {
		pkg.Spec.DisplayName, pkg.Spec.Keywords = csv.DisplayName, csv.Keywords
	}
	pkg.Spec.Versions = make([]v1alpha1.ExtensionVersion, len(versions))
	for i := range versions {
		pkg.Spec.Versions[i] = versions[i].spec
	}
	return pkg, skipped
}

// bundleURL is where a bundle's manifests are fetched from: its image when
// pinned by digest, else its inline objects through olm://, else its image
// by tag.
func bundleURL(catalogName, pkg string, b *olmBundle) string {
	if b.image != "" && (strings.Contains(b.image, "@sha256:") || b.objects == 0) {
		return "oci://" + b.image
	}
	return BundleScheme + "://" + catalogName + "/" + url.PathEscape(pkg) + "/" + url.PathEscape(b.name)
}

// Index reads an OLM File-Based Catalog from src, through f and with the
// credentials of access, and maps it to an Index: each olm.package with at least one usable bundle is a Package
// (description, defaultChannel, icon as a data: URL; displayName and
// keywords from the highest version's CSV); each olm.bundle is a version
// of engine Bundle whose version is its olm.package property's, with the
// entries of every channel naming it (replaces and skips given as the
// versions of the bundles they name; edges to bundles not in the catalog
// are left out), owned and required APIs from olm.gvk and olm.gvk.required
// ("group/version/Kind", "version/Kind" for the core group) and from the
// CSV's owned and required CRDs, required packages from
// olm.package.required ({packageName, versionRange}), install modes
// (the supported ones) and kubeVersion ">=<minKubeVersion>" from an inline
// CSV or the olm.csv.metadata property, and deprecations from
// olm.deprecations (a package entry deprecates every version, a channel
// entry sets Channels[].deprecated, a bundle entry its version).
//
// Malformed blobs are listed in Index.Skipped; blobs of other schemas are
// counted in Index.OtherBlobs. Everything read is bounded by
// Limits.MaxCatalogBytes. Errors are *catalog.FetchError (retry),
// *catalog.TooLargeError, *catalog.UnsafeArchiveError (a hostile catalog
// image), or a plain error naming the spec field to fix.
func Index(ctx context.Context, f *catalog.Fetcher, src *v1alpha1.OLMSource, catalogName string, access *catalog.Access) (*catalog.Index, error) {
	p := newOLMParser()
	digest, err := readCatalog(ctx, f, src, access, p)
	if err != nil {
		return nil, err
	}
	return p.index(catalogName, digest), nil
}

// Parse parses one FBC stream (JSON or YAML documents) into an Index, as
// Index does for a url source. It fails only when r fails.
func Parse(r io.Reader, catalogName string) (*catalog.Index, error) {
	p := newOLMParser()
	h := sha256.New()
	cr := &archive.CappedReader{R: io.TeeReader(r, h), N: 1<<63 - 2}
	p.parseStream("catalog", cr)
	return p.index(catalogName, "sha256:"+hex.EncodeToString(h.Sum(nil))), nil
}

// readCatalog feeds every FBC file of src to p and returns the content's
// digest: of the bytes read (url, path) or the image's manifest.
func readCatalog(ctx context.Context, f *catalog.Fetcher, src *v1alpha1.OLMSource, access *catalog.Access, p *olmParser) (string, error) {
	limit := f.EffectiveLimits().MaxCatalogBytes
	h := sha256.New()
	switch {
	case src.URL != "":
		return readOLMURL(ctx, f, src.URL, access, p, h, limit)
	case src.Path != "":
		return readOLMDir(src.Path, p, h, limit)
	case src.Image != "":
		return readOLMImage(ctx, f, src.Image, access, p, limit)
	}
	return "", errors.New("spec.source.olm: set one of url, path or image")
}

func sumOf(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// catalogTooLarge stops reading at the catalog size limit.
func catalogTooLarge(where string, limit int64) error {
	return &catalog.TooLargeError{URL: where, Limit: limit}
}

func readOLMURL(ctx context.Context, f *catalog.Fetcher, raw string, access *catalog.Access, p *olmParser, h hash.Hash, limit int64) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("spec.source.olm.url %q: must be an http:// or https:// URL", raw)
	}
	client, err := f.ClientFor(access, u)
	if err != nil {
		return "", err
	}
	shown := u.Redacted()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", shown, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", &catalog.FetchError{URL: shown, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", &catalog.FetchError{URL: shown, StatusCode: resp.StatusCode}
	}
	if resp.ContentLength > limit {
		return "", catalogTooLarge(shown, limit)
	}
	cr := &archive.CappedReader{R: io.TeeReader(resp.Body, h), N: limit}
	p.parseStream(shown, cr)
	if cr.N < 0 {
		return "", catalogTooLarge(shown, limit)
	}
	// A broken transfer may look like a malformed last document.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		if errors.Is(err, archive.ErrLimitReached) {
			return "", catalogTooLarge(shown, limit)
		}
		return "", &catalog.FetchError{URL: shown, Err: err}
	}
	return sumOf(h), nil
}

// isFBCFile reports whether a file name is one opm reads.
func isFBCFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".json", ".yaml", ".yml":
		return true
	}
	return false
}

func readOLMDir(root string, p *olmParser, h hash.Hash, limit int64) (string, error) {
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return "", fmt.Errorf("spec.source.olm.path %q: not a readable folder: %v", root, err)
	}
	budget := limit
	err := filepath.WalkDir(root, func(p0 string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || !isFBCFile(d.Name()) {
			return nil
		}
		rel, _ := filepath.Rel(root, p0)
		fh, err := os.Open(p0)
		if err != nil {
			return err
		}
		defer fh.Close()
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		cr := &archive.CappedReader{R: io.TeeReader(fh, h), N: budget}
		p.parseStream(filepath.ToSlash(rel), cr)
		if _, err := io.Copy(io.Discard, cr); err != nil {
			if errors.Is(err, archive.ErrLimitReached) {
				return catalogTooLarge("file://"+root, limit)
			}
			return err
		}
		budget = cr.N
		return nil
	})
	if err != nil {
		var tl *catalog.TooLargeError
		if errors.As(err, &tl) {
			return "", err
		}
		return "", fmt.Errorf("spec.source.olm.path %q: %w", root, err)
	}
	return sumOf(h), nil
}

// readOLMImage feeds the FBC files of a catalog image to p.
func readOLMImage(ctx context.Context, f *catalog.Fetcher, ref string, access *catalog.Access, p *olmParser, limit int64) (string, error) {
	img, digest, err := oci.PullImage(ctx, f, ref, access, limit)
	if err != nil {
		return "", fmt.Errorf("spec.source.olm.image: %w", err)
	}
	dir := "configs"
	if cfg, err := img.ConfigFile(); err == nil {
		if d := cfg.Config.Labels[olmConfigsLabel]; d != "" {
			dir = strings.Trim(path.Clean("/"+d), "/")
		}
	}
	where := "oci://" + ref
	err = oci.WalkImage(img, where, []string{dir}, limit, func(name string, r io.Reader, _ int64) error {
		if !isFBCFile(name) {
			return nil
		}
		p.parseStream(name, r)
		_, err := io.Copy(io.Discard, r)
		return err
	})
	if err != nil {
		return "", err
	}
	return digest, nil
}
