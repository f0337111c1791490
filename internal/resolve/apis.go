package resolve

import (
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// ProviderChoice is how one required API of an operator bundle
// (Operator.RequiredAPIs: olm.gvk.required, the CSV's required CRDs) is
// met: by a dependency on the extension that provides it.
type ProviderChoice struct {
	// API is the required API, "group/version/Kind".
	API string
	// Provider is the extension chosen to provide it, Range the versions
	// of it that own the API ("" for every version); Provider is "" when
	// no extension of any catalog owns the API.
	Provider string
	Range    string
	// Candidates are every extension that owns the API in some version,
	// sorted by name; Provider is one of them.
	Candidates []string
	// Reason says why Provider was chosen among Candidates, or, when no
	// extension owns the API, which catalogs were searched.
	Reason string
}

// Requirements of operator bundles, as the resolver reads them:
//
//   - Operator.RequiredPackages (olm.package.required) are Dependencies
//     as they are.
//   - Each of Operator.RequiredAPIs is a dependency on one extension that
//     owns the API (Operator.OwnedAPIs) in some version, from any
//     catalog, within the versions that own it, or whose installation on
//     the cluster owns the API's CRD (Problem.Provided; any version of
//     it). Among several, the choice is: the extension whose installation
//     owns the CRD on the cluster; else one that an installation on the
//     cluster asks for; else one the bundle names in its required
//     packages; else one of the bundle's own catalog; else the first by
//     name.
//   - An API a version owns itself, and an API of Kubernetes itself (the
//     core group, a group without a dot, or a group under k8s.io or
//     kubernetes.io), needs no provider.
//   - An API no extension owns is a dependency no catalog offers, named
//     "API <group/version/Kind>"; its explanation names the catalogs
//     searched.
//
// withRequirements returns u with those dependencies added to the versions
// that have requirements (copies; u is not modified) and the choices made,
// by version label ("name version"). onCluster holds the extensions that
// installations on the cluster ask for, provided the APIs whose CRDs an
// installation on the cluster owns, by its extension; nil for none.
func withRequirements(u Universe, onCluster map[string]bool, provided map[string]string) (Universe, map[string][]ProviderChoice) {
	owners := map[string][]string{} // API → extensions owning it in some version, sorted
	needed := false
	names := make([]string, 0, len(u))
	for name := range u {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range u[name] {
			if v.Operator == nil {
				continue
			}
			needed = needed || len(v.Operator.RequiredAPIs) > 0 || len(v.Operator.RequiredPackages) > 0
			for _, api := range v.Operator.OwnedAPIs {
				if o := owners[api]; len(o) == 0 || o[len(o)-1] != name {
					owners[api] = append(o, name)
				}
			}
		}
	}
	if !needed {
		return u, nil
	}
	for api, ext := range provided {
		if _, known := u[ext]; known && !slices.Contains(owners[api], ext) {
			owners[api] = append(owners[api], ext)
			slices.Sort(owners[api])
		}
	}
	out := make(Universe, len(u))
	choices := map[string][]ProviderChoice{}
	for _, name := range names {
		versions := u[name]
		if !slices.ContainsFunc(versions, hasRequirements) {
			out[name] = versions
			continue
		}
		versions = slices.Clone(versions)
		for i := range versions {
			v := &versions[i]
			if !hasRequirements(*v) {
				continue
			}
			deps := slices.Clip(v.Dependencies)
			deps = append(deps, v.Operator.RequiredPackages...)
			for _, api := range v.Operator.RequiredAPIs {
				if builtinAPI(api) || slices.Contains(v.Operator.OwnedAPIs, api) {
					continue
				}
				installed := provided[api]
				if _, known := u[installed]; !known {
					installed = ""
				}
				c := chooseProvider(u, name, *v, api, owners[api], onCluster, installed)
				choices[name+" "+v.Version] = append(choices[name+" "+v.Version], c)
				if c.Provider == "" {
					deps = append(deps, v1alpha1.Dependency{Name: apiDependencyName(api)})
					continue
				}
				deps = append(deps, v1alpha1.Dependency{Name: c.Provider, Version: c.Range})
			}
			v.Dependencies = deps
		}
		out[name] = versions
	}
	return out, choices
}

func hasRequirements(v v1alpha1.ExtensionVersion) bool {
	return v.Operator != nil && (len(v.Operator.RequiredAPIs) > 0 || len(v.Operator.RequiredPackages) > 0)
}

// apiPrefix starts the name of a dependency on an API no extension owns;
// no extension name can start so (names are DNS subdomains).
const apiPrefix = "API "

func apiDependencyName(api string) string { return apiPrefix + api }

// builtinAPI reports whether api ("group/version/Kind", "version/Kind")
// is served by Kubernetes itself: the core group, a group without a dot
// (apps, batch, policy…), or one under k8s.io or kubernetes.io, which
// CRDs may not use without the API's approval.
func builtinAPI(api string) bool {
	parts := strings.Split(api, "/")
	if len(parts) < 3 {
		return true
	}
	group := parts[0]
	return !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io") || strings.HasSuffix(group, ".kubernetes.io")
}

// chooseProvider picks the extension that meets requirement api of
// version v of extension name, by the rules of withRequirements.
func chooseProvider(u Universe, name string, v v1alpha1.ExtensionVersion, api string, owners []string, onCluster map[string]bool, installed string) ProviderChoice {
	c := ProviderChoice{API: api}
	for _, o := range owners {
		if o != name {
			c.Candidates = append(c.Candidates, o)
		}
	}
	if len(c.Candidates) == 0 {
		c.Reason = "no extension of " + catalogsOf(u) + " owns it"
		return c
	}
	pick := func(ok func(string) bool, reason string) bool {
		for _, o := range c.Candidates {
			if ok(o) {
				c.Provider, c.Reason = o, reason
				return true
			}
		}
		return false
	}
	named := func(o string) bool {
		return slices.ContainsFunc(v.Operator.RequiredPackages, func(d v1alpha1.Dependency) bool { return d.Name == o })
	}
	sameCatalog := func(o string) bool {
		return v.Source.Catalog != "" && slices.ContainsFunc(u[o], func(p v1alpha1.ExtensionVersion) bool {
			return p.Source.Catalog == v.Source.Catalog && owns(p, api)
		})
	}
	switch {
	case installed != "" && installed != name:
		// Whatever the catalogs say, the cluster serves it already.
		c.Provider, c.Reason = installed, "its installation on the cluster owns the API's CRD"
		return c
	case len(c.Candidates) == 1:
		c.Provider, c.Reason = c.Candidates[0], "the only extension that owns it"
	case pick(func(o string) bool { return onCluster[o] }, "an installation on the cluster already asks for it"):
	case pick(named, "the bundle requires the package (olm.package.required)"):
	case pick(sameCatalog, "it comes from the bundle's own catalog "+v.Source.Catalog):
	default:
		c.Provider, c.Reason = c.Candidates[0], "the first by name of "+strings.Join(c.Candidates, ", ")+"; install another one to choose it"
	}
	c.Range = ownersRange(u[c.Provider], api)
	return c
}

func owns(v v1alpha1.ExtensionVersion, api string) bool {
	return v.Operator != nil && slices.Contains(v.Operator.OwnedAPIs, api)
}

// ownersRange is a range admitting exactly the versions that own api: ""
// when every version does, ">=lo" or ">=lo <=hi" when they follow each
// other, else each version joined by "||". Versions that do not parse are
// left out (NewIndex leaves them out too).
func ownersRange(versions []v1alpha1.ExtensionVersion, api string) string {
	type parsed struct {
		sv   *semver.Version
		owns bool
	}
	var all []parsed
	for _, v := range versions {
		if sv, err := semver.NewVersion(v.Version); err == nil {
			all = append(all, parsed{sv, owns(v, api)})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].sv.LessThan(all[j].sv) })
	lo, hi, count, pre := -1, -1, 0, false
	for i, p := range all {
		if p.owns {
			if lo < 0 {
				lo = i
			}
			hi = i
			count++
			pre = pre || p.sv.Prerelease() != ""
		}
	}
	switch {
	case count == len(all) || count == 0:
		return "" // count 0: the owner is known from the cluster, not its catalog

	case count == hi-lo+1 && !pre && hi == len(all)-1:
		return ">=" + all[lo].sv.Original()
	case count == hi-lo+1 && !pre:
		return ">=" + all[lo].sv.Original() + " <=" + all[hi].sv.Original()
	}
	var exact []string
	for _, p := range all {
		if p.owns {
			exact = append(exact, "="+p.sv.Original())
		}
	}
	return strings.Join(exact, " || ")
}

// catalogsOf names the catalogs the versions of u come from: "the
// catalogs a, b" or "the catalog a"; "any catalog" when none is named.
func catalogsOf(u Universe) string {
	seen := map[string]bool{}
	for _, versions := range u {
		for _, v := range versions {
			if v.Source.Catalog != "" {
				seen[v.Source.Catalog] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for c := range seen {
		names = append(names, c)
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return "any catalog"
	case 1:
		return "the catalog " + names[0]
	}
	return "the catalogs " + strings.Join(names, ", ")
}

// maxVariants bounds the variants an Index keeps.
const maxVariants = 16

// variantFor returns the Index that solves p: ix itself, unless p's
// cluster changes a choice of provider — an installation asks for another
// of several candidates, or owns the CRD of a required API
// (Problem.Provided) — in which case an Index whose choices follow the
// cluster (built once per such set of facts, and kept). Only those facts
// count, so clusters that differ in anything else share ix.
func (ix *Index) variantFor(p Problem) *Index {
	root := ix
	if ix.root != nil {
		root = ix.root
	}
	if ix.base != nil || len(root.choices) == 0 {
		return ix
	}
	asked, matters := map[string]bool{}, false
	for _, in := range p.Installations {
		asked[in.Extension] = true
		matters = matters || root.candidates[in.Extension]
	}
	for api := range p.Provided {
		matters = matters || root.requiredAPIs[api]
	}
	if !matters {
		return root
	}
	// The provided APIs that a version requires, when their provider is
	// not root's choice.
	var provided map[string]string
	var providedKeys []string
	for _, cs := range root.choices {
		for _, c := range cs {
			if ext, ok := p.Provided[c.API]; ok && ext != c.Provider && provided[c.API] == "" {
				if provided == nil {
					provided = map[string]string{}
				}
				provided[c.API] = ext
				providedKeys = append(providedKeys, c.API+"="+ext)
			}
		}
	}
	sort.Strings(providedKeys)
	// The candidates asked for, when the first of them (the one
	// withRequirements prefers) is not root's choice.
	relevant, differs := map[string]bool{}, false
	for _, cs := range root.choices {
		for _, c := range cs {
			first := ""
			for _, o := range c.Candidates {
				if asked[o] && len(c.Candidates) > 1 {
					relevant[o] = true
					if first == "" {
						first = o
					}
				}
			}
			differs = differs || first != "" && first != c.Provider
		}
	}
	if !differs && provided == nil {
		clear(relevant)
	}
	keys := make([]string, 0, len(relevant))
	for o := range relevant {
		keys = append(keys, o)
	}
	sort.Strings(keys)
	key := strings.Join(keys, ",")
	if provided != nil {
		key += ";" + strings.Join(providedKeys, ",")
	}
	if key == ix.clusterKey {
		return ix
	}
	if key == "" {
		return root
	}
	root.variantMu.Lock()
	defer root.variantMu.Unlock()
	if v := root.variants[key]; v != nil {
		return v
	}
	if root.variants == nil || len(root.variants) >= maxVariants {
		root.variants = map[string]*Index{}
	}
	v := newIndex(root.source, root.defaults, relevant, provided)
	v.root, v.clusterKey = root, key
	root.variants[key] = v
	return v
}

// Providers returns how the required APIs of extension's version are
// met (see withRequirements), in the order the version lists them; nil
// when it requires none.
func (ix *Index) Providers(extension, version string) []ProviderChoice {
	return ix.choices[extension+" "+version]
}

// UniverseWithRequirements is UniverseOf(extensions) with the
// requirements of operator bundles turned into Dependencies, as Solve
// sees them on a cluster whose installations ask for the extensions in
// onCluster (see withRequirements): what an installed version needs,
// for callers that look at dependencies outside a Solve. extensions is
// not modified.
func UniverseWithRequirements(extensions []v1alpha1.Extension, onCluster []string, provided map[string]string) Universe {
	asked := make(map[string]bool, len(onCluster))
	for _, e := range onCluster {
		asked[e] = true
	}
	u, _ := withRequirements(UniverseOf(extensions), asked, provided)
	return u
}

// RequiredAPIGroups lists the API groups that versions of the extensions
// named in asked (those the installations on a cluster ask for) require
// (Operator.RequiredAPIs) and Kubernetes does not serve itself, sorted:
// the groups whose CRDs on the cluster can meet a requirement
// (Problem.Provided). A provider added for a requirement is an
// installation in the next solve, so its own requirements count then.
func RequiredAPIGroups(extensions []v1alpha1.Extension, asked []string) []string {
	want := make(map[string]bool, len(asked))
	for _, name := range asked {
		want[name] = true
	}
	var groups []string
	for i := range extensions {
		if !want[extensions[i].Name] {
			continue
		}
		for _, v := range extensions[i].Spec.Versions {
			if v.Operator == nil {
				continue
			}
			for _, api := range v.Operator.RequiredAPIs {
				if group, _, ok := strings.Cut(api, "/"); ok && !builtinAPI(api) && !slices.Contains(groups, group) {
					groups = append(groups, group)
				}
			}
		}
	}
	sort.Strings(groups)
	return groups
}
