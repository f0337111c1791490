package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
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
	// Values summarises the version's values schema; nil when it has
	// none.
	Values *SchemaSummary `json:"values,omitempty"`
}

// SchemaSummary is the top of a values schema: what a person may set.
type SchemaSummary struct {
	// Properties are the schema's properties two levels deep, by path.
	Properties []SchemaProperty `json:"properties"`
	// More counts the properties deeper than that, not listed.
	More int `json:"more,omitempty"`
}

// SchemaProperty is one property of a values schema.
type SchemaProperty struct {
	// Path is dotted, as --set takes it: "image.tag".
	Path        string `json:"path"`
	Type        string `json:"type,omitempty"`
	Required    bool   `json:"required,omitempty"`
	Default     string `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
}

// Show reads one Extension (one GET) and returns its detail. A missing
// extension is an error naming it and the commands that find one.
func Show(ctx context.Context, c client.Reader, name string) (*ExtensionDetail, error) {
	ext := &v1alpha1.Extension{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, ext); err != nil {
		return nil, extensionError(name, err)
	}
	return DetailOf(ext), nil
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
		if v.ValuesSchema != nil {
			vd.Values = SummarizeSchema(v.ValuesSchema.Raw)
		}
		d.Versions = append(d.Versions, vd)
	}
	return d
}

// schemaDepth is how deep SummarizeSchema lists properties.
const schemaDepth = 2

// SummarizeSchema lists the properties of a JSON schema two levels deep,
// sorted by path, and counts the deeper ones. A schema that is not a
// JSON object yields an empty summary.
func SummarizeSchema(raw []byte) *SchemaSummary {
	var root map[string]any
	s := &SchemaSummary{Properties: []SchemaProperty{}}
	if json.Unmarshal(raw, &root) != nil {
		return s
	}
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
			if depth > schemaDepth {
				s.More++
				walk(child, prefix+name+".", depth+1)
				continue
			}
			sp := SchemaProperty{Path: prefix + name, Required: required[name]}
			if child != nil {
				sp.Type = typeOf(child["type"])
				if def, ok := child["default"]; ok {
					b, _ := json.Marshal(def)
					sp.Default = string(b)
				}
				sp.Description, _ = child["description"].(string)
			}
			s.Properties = append(s.Properties, sp)
			walk(child, prefix+name+".", depth+1)
		}
	}
	walk(root, "", 1)
	sort.Slice(s.Properties, func(i, j int) bool { return s.Properties[i].Path < s.Properties[j].Path })
	return s
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
