package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
)

// ExtensionMatch is one extension a search found.
type ExtensionMatch struct {
	Name        string   `json:"name"`
	DisplayName string   `json:"displayName,omitempty"`
	Description string   `json:"description,omitempty"`
	Keywords    []string `json:"keywords,omitempty"`
	// Latest is the highest version that is not deprecated (the highest
	// of all when every one is).
	Latest string `json:"latest"`
	// Catalogs are the catalogs that supply its versions, sorted.
	Catalogs []string `json:"catalogs,omitempty"`
	// MatchedOn says where the text was found: name, displayName,
	// keyword, description; the best first.
	MatchedOn []string `json:"matchedOn,omitempty"`
}

// Search lists the Extensions (one LIST) whose name, display name,
// keywords or description contain text, case-insensitively, across
// every catalog; see SearchExtensions for the order. An empty text
// matches every extension.
func Search(ctx context.Context, c client.Reader, text string) ([]ExtensionMatch, error) {
	var list v1alpha1.ExtensionList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing Extensions: %w", err)
	}
	return SearchExtensions(list.Items, text), nil
}

// SearchExtensions is Search over extensions already read. The best
// matches come first: a name equal to the text, a name containing it,
// then display name, keyword and description matches; ties by name.
func SearchExtensions(exts []v1alpha1.Extension, text string) []ExtensionMatch {
	q := strings.ToLower(strings.TrimSpace(text))
	type scored struct {
		m     ExtensionMatch
		score int
	}
	var found []scored
	for i := range exts {
		e := &exts[i]
		var on []string
		score := 0
		add := func(where string, points int) {
			on = append(on, where)
			if score == 0 {
				score = points
			}
		}
		switch name := strings.ToLower(e.Name); {
		case q == "":
			score = 1
		case name == q:
			add("name", 5)
		case strings.Contains(name, q):
			add("name", 4)
		}
		if q != "" && strings.Contains(strings.ToLower(e.Spec.DisplayName), q) {
			add("displayName", 3)
		}
		for _, k := range e.Spec.Keywords {
			if q != "" && strings.Contains(strings.ToLower(k), q) {
				add("keyword", 2)
				break
			}
		}
		if q != "" && strings.Contains(strings.ToLower(e.Spec.Description), q) {
			add("description", 1)
		}
		if score == 0 {
			continue
		}
		found = append(found, scored{ExtensionMatch{
			Name: e.Name, DisplayName: e.Spec.DisplayName, Description: e.Spec.Description,
			Keywords: e.Spec.Keywords, Latest: latestOf(e), Catalogs: catalogsOf(e), MatchedOn: on,
		}, score})
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].score != found[j].score {
			return found[i].score > found[j].score
		}
		return found[i].m.Name < found[j].m.Name
	})
	out := make([]ExtensionMatch, len(found))
	for i := range found {
		out[i] = found[i].m
	}
	return out
}

// latestOf is the first version that is not deprecated (versions are
// listed highest first), else the first.
func latestOf(e *v1alpha1.Extension) string {
	for _, v := range e.Spec.Versions {
		if !v.Deprecated {
			return v.Version
		}
	}
	if len(e.Spec.Versions) > 0 {
		return e.Spec.Versions[0].Version
	}
	return ""
}

func catalogsOf(e *v1alpha1.Extension) []string {
	seen := map[string]bool{}
	var out []string
	add := func(c string) {
		if c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	add(e.Labels[v1alpha1.LabelCatalog])
	for _, v := range e.Spec.Versions {
		add(v.Source.Catalog)
	}
	sort.Strings(out)
	return out
}

// ExtensionDetail is everything a person needs to choose a version of
// an extension.
type ExtensionDetail struct {
	Name           string          `json:"name"`
	DisplayName    string          `json:"displayName,omitempty"`
	Description    string          `json:"description,omitempty"`
	Home           string          `json:"home,omitempty"`
	Icon           string          `json:"icon,omitempty"`
	Keywords       []string        `json:"keywords,omitempty"`
	Catalogs       []string        `json:"catalogs,omitempty"`
	DefaultChannel string          `json:"defaultChannel,omitempty"`
	Versions       []VersionDetail `json:"versions"`
}

// VersionDetail is one version of an extension.
type VersionDetail struct {
	Version    string `json:"version"`
	AppVersion string `json:"appVersion,omitempty"`
	// KubeVersion is the range of Kubernetes versions it supports; ""
	// means any.
	KubeVersion  string                `json:"kubeVersion,omitempty"`
	Engine       string                `json:"engine"`
	Catalog      string                `json:"catalog,omitempty"`
	Dependencies []v1alpha1.Dependency `json:"dependencies,omitempty"`
	Deprecated   bool                  `json:"deprecated,omitempty"`
	// Channels are an operator bundle's channels.
	Channels []string `json:"channels,omitempty"`
	// Values summarises what may be set: the version's values schema and
	// its chart's values.yaml (the defaults); nil when neither is known.
	Values *SchemaSummary `json:"values,omitempty"`
	// ValuesNote says why the chart's values are not shown, when they are
	// not: the manager could not read them, or was not asked.
	ValuesNote string `json:"valuesNote,omitempty"`
	// SignedBy is who signed this version's artifact, as an installation
	// that fetched it verified it (status.artifact): verification happens
	// on fetch, so a version no installation fetched under a policy shows
	// nothing.
	SignedBy string `json:"signedBy,omitempty"`
}

// SchemaSummary is the top of a version's values: what a person may set.
type SchemaSummary struct {
	// Properties are the schema's properties and values.yaml's keys two
	// levels deep, by path.
	Properties []SchemaProperty `json:"properties"`
	// More counts the properties deeper than that, not listed.
	More int `json:"more,omitempty"`
}

// SchemaProperty is one property of a values schema.
type SchemaProperty struct {
	// Path is dotted, as --set takes it: "image.tag".
	Path     string `json:"path"`
	Type     string `json:"type,omitempty"`
	Required bool   `json:"required,omitempty"`
	// Default is the value as JSON: the schema's default when it has one,
	// else the chart's values.yaml value (an object's keys are listed as
	// properties of their own).
	Default     string `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
}

// Show reads one Extension and returns its detail. When valuesWait is
// positive and the manager has not read the newest version's values yet,
// Show asks it to (AskValues) and waits up to valuesWait; the detail then
// says in ValuesNote why they are missing, if they are. A missing
// extension is an error naming it and the commands that find one.
func Show(ctx context.Context, c client.Client, name string, valuesWait time.Duration) (*ExtensionDetail, error) {
	ext := &v1alpha1.Extension{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, ext); err != nil {
		return nil, extensionError(name, err)
	}
	note := ""
	if valuesWait > 0 && len(ext.Spec.Versions) > 0 {
		ext, note = AskValues(ctx, c, ext, ext.Spec.Versions[0].Version, valuesWait)
	}
	d := DetailOf(ext)
	if note != "" {
		d.Versions[0].ValuesNote = note
	}
	// Which versions were verified: best effort, a reader who may not
	// list installations everywhere sees no marks.
	var insts v1alpha1.ExtensionInstallationList
	if err := c.List(ctx, &insts); err == nil {
		MarkSigned(d, ext, insts.Items)
	}
	return d, nil
}

// MarkSigned sets SignedBy of each version of d whose artifact (the
// version's source URL) an installation of ext verified, from that
// installation's status.artifact; the built-in catalog's versions are
// trusted, not signed, and get no mark. Pure.
func MarkSigned(d *ExtensionDetail, ext *v1alpha1.Extension, insts []v1alpha1.ExtensionInstallation) {
	signed := map[[2]string]string{}
	for i := range insts {
		a := insts[i].Status.Artifact
		if insts[i].Spec.Extension != ext.Name || a == nil || a.Verification == nil || !a.Verification.Verified || a.Verification.Provider == v1alpha1.VerificationBuiltin {
			continue
		}
		signed[[2]string{a.Version, a.URL}] = fmt.Sprintf("%s (%s)", a.Verification.Identity, a.Verification.Provider)
	}
	for i, v := range ext.Spec.Versions {
		if i < len(d.Versions) && d.Versions[i].Version == v.Version {
			d.Versions[i].SignedBy = signed[[2]string{v.Version, v.Source.URL}]
		}
	}
}

func extensionError(name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("extension %q not found in any catalog; run \"annexctl search %s\" or \"annexctl catalog list\"", name, name)
	}
	return fmt.Errorf("reading extension %q: %w", name, err)
}

// DetailOf is the detail of an Extension already read. Versions keep the
// Extension's order (highest first).
func DetailOf(ext *v1alpha1.Extension) *ExtensionDetail {
	d := &ExtensionDetail{
		Name: ext.Name, DisplayName: ext.Spec.DisplayName, Description: ext.Spec.Description,
		Home: ext.Spec.Home, Icon: ext.Spec.Icon, Keywords: ext.Spec.Keywords,
		Catalogs: catalogsOf(ext), DefaultChannel: ext.Spec.DefaultChannel,
		Versions: make([]VersionDetail, 0, len(ext.Spec.Versions)),
	}
	for _, v := range ext.Spec.Versions {
		vd := VersionDetail{
			Version: v.Version, AppVersion: v.AppVersion, KubeVersion: v.KubeVersion,
			Engine: string(v.Engine), Catalog: v.Source.Catalog, Dependencies: v.Dependencies,
			Deprecated: v.Deprecated,
		}
		if vd.Engine == "" {
			vd.Engine = string(v1alpha1.EngineHelm)
		}
		if vd.Catalog == "" {
			vd.Catalog = ext.Labels[v1alpha1.LabelCatalog]
		}
		for _, ch := range v.Channels {
			vd.Channels = append(vd.Channels, ch.Name)
		}
		vd.Values, vd.ValuesNote = valuesOf(ext, v)
		d.Versions = append(d.Versions, vd)
	}
	return d
}

// valuesOf summarises a version's values: its schema (the Extension's, or
// the one the manager read from the chart) with the defaults of the
// chart's values.yaml once the manager has read it, and what the manager
// said when it could not.
func valuesOf(ext *v1alpha1.Extension, v v1alpha1.ExtensionVersion) (*SchemaSummary, string) {
	schema, defaults := ValuesOf(ext, v.Version)
	note := ""
	read, current := catalog.CurrentValues(ext, v.Version)
	if current {
		note = read.Message
	}
	if schema == nil && defaults == nil && (!current || note != "") {
		return nil, note
	}
	return SummarizeValues(schema, defaults), note
}

// ValuesOf returns a version's values schema and defaults (values.yaml as
// JSON), each nil when not known: the schema from the Extension's spec or,
// like the defaults, from what the manager read (status.values, when it
// belongs to the version's current digest).
func ValuesOf(ext *v1alpha1.Extension, version string) (schema, defaults []byte) {
	for _, v := range ext.Spec.Versions {
		if v.Version == version && v.ValuesSchema != nil {
			schema = v.ValuesSchema.Raw
		}
	}
	if read, ok := catalog.CurrentValues(ext, version); ok {
		if read.Schema != nil && schema == nil {
			schema = read.Schema.Raw
		}
		if read.Defaults != nil {
			defaults = read.Defaults.Raw
		}
	}
	return schema, defaults
}

// schemaDepth is how deep SummarizeValues lists properties.
const schemaDepth = 2

// SummarizeValues lists what may be set, two levels deep, sorted by path,
// and counts the deeper properties: the properties of a JSON schema, each
// with the value values.yaml gives it (what Helm installs) or else the
// schema's default (which Helm never applies, but documents), and
// the keys of values.yaml the schema does not list (values.yaml is the
// chart's default values, as Helm reads them), typed by their value.
// defaults is values.yaml as JSON; either may be nil. Something that is
// not a JSON object counts as nothing.
func SummarizeValues(schemaRaw, defaultsRaw []byte) *SchemaSummary {
	var root, defaults map[string]any
	s := &SchemaSummary{Properties: []SchemaProperty{}}
	_ = json.Unmarshal(schemaRaw, &root)
	_ = json.Unmarshal(defaultsRaw, &defaults)
	seen := map[string]bool{}
	var walk func(node map[string]any, prefix string, depth int)
	walk = func(node map[string]any, prefix string, depth int) {
		props, _ := node["properties"].(map[string]any)
		required := map[string]bool{}
		if req, ok := node["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok {
					required[name] = true
				}
			}
		}
		for name, p := range props {
			child, _ := p.(map[string]any)
			path := prefix + pathKey(name)
			seen[path] = true
			if depth > schemaDepth {
				s.More++
				walk(child, path+".", depth+1)
				continue
			}
			sp := SchemaProperty{Path: path, Required: required[name]}
			if child != nil {
				sp.Type = typeOf(child["type"])
				sp.Description, _ = child["description"].(string)
			}
			if v, ok := valueAt(defaults, path); ok {
				sp.Default = defaultText(v)
			} else if def, ok := child["default"]; ok && child != nil {
				b, _ := json.Marshal(def)
				sp.Default = string(b)
			}
			s.Properties = append(s.Properties, sp)
			walk(child, path+".", depth+1)
		}
	}
	walk(root, "", 1)
	var walkValues func(node map[string]any, prefix string, depth int)
	walkValues = func(node map[string]any, prefix string, depth int) {
		for name, v := range node {
			path := prefix + pathKey(name)
			child, _ := v.(map[string]any)
			switch {
			case seen[path]:
			case depth > schemaDepth:
				s.More++
			default:
				s.Properties = append(s.Properties, SchemaProperty{Path: path, Type: jsonType(v), Default: defaultText(v)})
			}
			walkValues(child, path+".", depth+1)
		}
	}
	walkValues(defaults, "", 1)
	sort.Slice(s.Properties, func(i, j int) bool { return s.Properties[i].Path < s.Properties[j].Path })
	return s
}

// pathKey is a key as a segment of a dotted path: dots escaped with a
// backslash, as --set reads them ("podAnnotations.prometheus\.io/port").
func pathKey(key string) string { return strings.ReplaceAll(key, ".", `\.`) }

// valueAt returns the value at a dotted path (segments as pathKey writes
// them) of values.
func valueAt(values map[string]any, path string) (any, bool) {
	var cur any = values
	for _, seg := range splitPath(path) {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// splitPath splits a dotted path at the dots pathKey did not escape.
func splitPath(path string) []string {
	var out []string
	var seg strings.Builder
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path) && path[i+1] == '.':
			seg.WriteByte('.')
			i++
		case path[i] == '.':
			out = append(out, seg.String())
			seg.Reset()
		default:
			seg.WriteByte(path[i])
		}
	}
	return append(out, seg.String())
}

// defaultText prints a values.yaml value as a default: JSON, except an
// object with keys, whose keys are listed on their own ("").
func defaultText(v any) string {
	if m, ok := v.(map[string]any); ok && len(m) > 0 {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// jsonType names the JSON schema type of a values.yaml value.
func jsonType(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case nil:
		return "null"
	}
	return ""
}

// AskValues makes sure the manager has read the values of one version of
// ext: when status.values has no current entry for it, or one that says
// why it could not be read (the repository may be back), AskValues adds the
// version to the annotation annex.dev/values-requested (the manager reads
// the chart with the catalog's credentials; the user needs to reach only
// the API server) and polls the Extension until the manager has answered
// or wait has passed. It returns the Extension as last read and, when
// the values are still unknown, a note saying why and what to do.
// Versions of other engines than Helm have no values.yaml and are not
// asked for; a wait of zero or less does not ask.
func AskValues(ctx context.Context, c client.Client, ext *v1alpha1.Extension, version string, wait time.Duration) (*v1alpha1.Extension, string) {
	if held, ok := catalog.CurrentValues(ext, version); (ok && held.Message == "") || wait <= 0 {
		return ext, ""
	}
	for _, v := range ext.Spec.Versions {
		if v.Version == version && v.Engine != "" && v.Engine != v1alpha1.EngineHelm {
			return ext, ""
		}
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := requestValues(ctx, c, ext, version); err != nil {
		if apierrors.IsForbidden(err) {
			return ext, fmt.Sprintf("the values.yaml of %s %s is not read yet, and asking the manager to read it needs permission to patch extensions.annex.dev; ask an admin to run annexctl show %[1]s once, or for that permission", ext.Name, version)
		}
		return ext, fmt.Sprintf("asking the manager for the values of %s %s: %v", ext.Name, version, err)
	}
	for {
		select {
		case <-ctx.Done():
			return ext, fmt.Sprintf("the manager did not read the values of %s %s within %s; is it running? It keeps the request: run the command again later", ext.Name, version, wait)
		case <-time.After(valuesPoll):
		}
		got := &v1alpha1.Extension{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ext), got); err != nil {
			if ctx.Err() == nil {
				return ext, fmt.Sprintf("reading extension %q: %v", ext.Name, err)
			}
			continue
		}
		ext = got
		asked := catalog.RequestedVersions(ext.Annotations[v1alpha1.AnnotationValuesRequested])
		if _, ok := catalog.CurrentValues(ext, version); ok && !slices.Contains(asked, version) {
			return ext, ""
		}
	}
}

// valuesPoll is how often AskValues reads the Extension while it waits.
const valuesPoll = 200 * time.Millisecond

// requestValues adds version to the annotation annex.dev/values-requested
// of ext, re-reading it when someone else changed it in between.
func requestValues(ctx context.Context, c client.Client, ext *v1alpha1.Extension, version string) error {
	ext = ext.DeepCopy()
	for attempt := 0; ; attempt++ {
		before := ext.DeepCopy()
		if ext.Annotations == nil {
			ext.Annotations = map[string]string{}
		}
		ext.Annotations[v1alpha1.AnnotationValuesRequested] = catalog.AddRequestedVersion(ext.Annotations[v1alpha1.AnnotationValuesRequested], version)
		err := c.Patch(ctx, ext, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if !apierrors.IsConflict(err) || attempt == 4 {
			return err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ext), ext); err != nil {
			return err
		}
	}
}

// typeOf prints a schema "type", which is a string or a list of them.
func typeOf(t any) string {
	switch t := t.(type) {
	case string:
		return t
	case []any:
		var parts []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "|")
	}
	return ""
}
