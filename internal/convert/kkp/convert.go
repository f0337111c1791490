package kkp

import (
	"bytes"
	"crypto/sha1" // #nosec G505 -- KKP's release names use SHA-1; this reproduces them, it secures nothing.
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

// Options say where the converted objects go on the hub.
type Options struct {
	// Cluster is the ManagedCluster the ApplicationInstallations run on
	// (their spec.cluster); empty means the hub itself.
	Cluster string
	// Namespace on the hub for the ExtensionInstallations; empty keeps
	// each ApplicationInstallation's own namespace.
	Namespace string
	// DatacenterLabel is the ManagedCluster label a definition's
	// selector.datacenters becomes a selector on (DefaultDatacenterLabel
	// when empty).
	DatacenterLabel string
}

// DefaultDatacenterLabel is the ManagedCluster label that stands for a KKP
// cluster's datacenter in the profiles the conversion writes.
const DefaultDatacenterLabel = "kkp.annex.dev/datacenter"

// Result is what a conversion made: the objects, in the order to apply
// them (Catalogs, then ExtensionProfiles, then ExtensionInstallations), and
// what did not carry over, one note per field or object.
type Result struct {
	Catalogs      []*v1alpha1.Catalog
	Profiles      []*v1alpha1.ExtensionProfile
	Installations []*v1alpha1.ExtensionInstallation
	// Adoptions are the Helm releases KKP made for the installations,
	// which Annex takes over in place (see the adoption guide).
	Adoptions []Adoption
	Notes     []string
}

// Adoption names the Helm release one ApplicationInstallation made.
type Adoption struct {
	// Installation is the ExtensionInstallation's namespace/name.
	Installation string
	// Release and Namespace are the Helm release's name and namespace on
	// the cluster.
	Release, Namespace string
}

// Convert reads every YAML or JSON document of docs and converts the KKP
// application objects among them. Documents of other kinds are named in a
// note and skipped. It fails on a document it cannot parse or on a KKP
// object that is invalid for KKP itself (a name missing, values given
// twice), naming the object.
func Convert(docs []byte, o Options) (*Result, error) {
	if o.DatacenterLabel == "" {
		o.DatacenterLabel = DefaultDatacenterLabel
	}
	c := &converter{o: o, res: &Result{}, catalogs: map[string]*v1alpha1.Catalog{}, defs: map[string]*definition{}}
	if err := c.read(docs); err != nil {
		return nil, err
	}
	if len(c.defs) == 0 && len(c.insts) == 0 {
		return nil, errors.New("no ApplicationDefinition or ApplicationInstallation of " + Group + "/v1 found: give the files `kubectl get applicationdefinitions,applicationinstallations -A -o yaml` writes")
	}
	for _, name := range sortedKeys(c.defs) {
		if err := c.definition(c.defs[name]); err != nil {
			return nil, err
		}
	}
	for _, in := range c.insts {
		if err := c.installation(in); err != nil {
			return nil, err
		}
	}
	for _, key := range sortedKeys(c.catalogs) {
		c.res.Catalogs = append(c.res.Catalogs, c.catalogs[key])
	}
	return c.res, nil
}

type converter struct {
	o        Options
	res      *Result
	defs     map[string]*definition
	insts    []*installation
	catalogs map[string]*v1alpha1.Catalog // by repository URL
}

func (c *converter) note(format string, args ...any) {
	c.res.Notes = append(c.res.Notes, fmt.Sprintf(format, args...))
}

// read splits docs into documents and keeps the KKP application objects,
// unwrapping Lists.
func (c *converter) read(docs []byte) error {
	r := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(docs), 4096)
	for i := 1; ; i++ {
		var raw json.RawMessage
		if err := r.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		if err := c.object(raw, fmt.Sprintf("document %d", i)); err != nil {
			return err
		}
	}
}

func (c *converter) object(raw json.RawMessage, where string) error {
	var head struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   objectMeta        `json:"metadata"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if strings.HasSuffix(head.Kind, "List") {
		for j, item := range head.Items {
			if err := c.object(item, fmt.Sprintf("%s, items[%d]", where, j)); err != nil {
				return err
			}
		}
		return nil
	}
	if head.APIVersion != Group+"/v1" {
		c.note("%s: %s %s %q is not a KKP application object: skipped", where, head.APIVersion, head.Kind, head.Metadata.Name)
		return nil
	}
	switch head.Kind {
	case "ApplicationDefinition":
		d := &definition{}
		if err := json.Unmarshal(raw, d); err != nil {
			return fmt.Errorf("%s: ApplicationDefinition %q: %w", where, head.Metadata.Name, err)
		}
		if d.Metadata.Name == "" {
			return fmt.Errorf("%s: an ApplicationDefinition has no metadata.name", where)
		}
		c.defs[d.Metadata.Name] = d
	case "ApplicationInstallation":
		in := &installation{}
		if err := json.Unmarshal(raw, in); err != nil {
			return fmt.Errorf("%s: ApplicationInstallation %q: %w", where, head.Metadata.Name, err)
		}
		if in.Metadata.Name == "" || in.Spec.ApplicationRef.Name == "" {
			return fmt.Errorf("%s: an ApplicationInstallation needs metadata.name and spec.applicationRef.name", where)
		}
		c.insts = append(c.insts, in)
	default:
		c.note("%s: %s %q has no Annex equivalent: skipped", where, head.Kind, head.Metadata.Name)
	}
	return nil
}

// chart is where one version of a definition comes from, in Annex's words.
type chart struct {
	extension string // the chart's name: the Extension its Catalog publishes
	version   string // the chart's version
	catalog   string
}

// chartOf returns the chart of the definition's version v (matched with
// or without a leading "v"), registering its repository as a Catalog.
func (c *converter) chartOf(d *definition, v string) (chart, bool) {
	for i, ver := range d.Spec.Versions {
		if strings.TrimPrefix(ver.Version, "v") != strings.TrimPrefix(v, "v") {
			continue
		}
		h := ver.Template.Source.Helm
		if h == nil {
			return chart{}, false
		}
		cat := c.catalogFor(h, fmt.Sprintf("ApplicationDefinition %s: spec.versions[%d]", d.Metadata.Name, i))
		return chart{extension: h.ChartName, version: h.ChartVersion, catalog: cat}, true
	}
	return chart{}, false
}

func (c *converter) definition(d *definition) error {
	where := "ApplicationDefinition " + d.Metadata.Name
	if d.Spec.Method != "" && d.Spec.Method != "helm" {
		c.note("%s: spec.method %q has no Annex equivalent: only helm is converted", where, d.Spec.Method)
	}
	for i, v := range d.Spec.Versions {
		switch {
		case v.Template.Source.Git != nil:
			c.note("%s: spec.versions[%d] (%s) comes from Git (%s): Annex installs charts from Helm repositories, OCI registries and folders; publish the chart to one and add it as a Catalog", where, i, v.Version, v.Template.Source.Git.Remote)
		case v.Template.Source.Helm != nil:
			c.chartOf(d, v.Version)
		}
		if len(v.Template.TemplateCredentials) > 0 {
			c.note("%s: spec.versions[%d].template.templateCredentials are not converted: Annex downloads charts with their dependencies packaged", where, i)
		}
	}
	if d.Spec.DisplayName != "" || d.Spec.Description != "" {
		c.note("%s: spec.displayName and spec.description are not converted: the Extension takes them from the chart (Chart.yaml)", where)
	}
	if !d.Spec.Default && !d.Spec.Enforced {
		return nil
	}
	return c.profile(d)
}

// profile turns a default or enforced application into an ExtensionProfile:
// the clusters of its datacenters (every cluster when it names none) get
// its default version with its default values.
func (c *converter) profile(d *definition) error {
	where := "ApplicationDefinition " + d.Metadata.Name
	version := d.Spec.DefaultVersion
	if version == "" {
		version = highest(d.Spec.Versions)
	}
	ch, ok := c.chartOf(d, version)
	if !ok {
		c.note("%s: spec.default/enforced: version %s has no Helm source: no ExtensionProfile written", where, version)
		return nil
	}
	values, err := valuesOf(d.Spec.DefaultValues, d.Spec.DefaultValuesBlock)
	if err != nil {
		return fmt.Errorf("%s: spec.defaultValues: %w", where, err)
	}
	mode := v1alpha1.ProfileModeDefault
	if d.Spec.Enforced {
		mode = v1alpha1.ProfileModeEnforced
	}
	sel := &metav1.LabelSelector{}
	if len(d.Spec.Selector.Datacenters) > 0 {
		sel.MatchExpressions = []metav1.LabelSelectorRequirement{{
			Key: c.o.DatacenterLabel, Operator: metav1.LabelSelectorOpIn, Values: slices.Sorted(slices.Values(d.Spec.Selector.Datacenters)),
		}}
		c.note("%s: spec.selector.datacenters became a selector on the ManagedCluster label %s: label each ManagedCluster with its datacenter", where, c.o.DatacenterLabel)
	}
	p := &v1alpha1.ExtensionProfile{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionProfile"},
		ObjectMeta: metav1.ObjectMeta{Name: names.Bounded("kkp-"+d.Metadata.Name, names.MaxLabelValue)},
		Spec: v1alpha1.ExtensionProfileSpec{
			ClusterSelector: sel,
			Extensions: []v1alpha1.ProfileExtension{{
				Name: ch.extension, Version: ch.version, Values: values, Mode: mode,
				TargetNamespace: defaultNamespace(d),
			}},
		},
	}
	c.res.Profiles = append(c.res.Profiles, p)
	return nil
}

func (c *converter) installation(in *installation) error {
	where := fmt.Sprintf("ApplicationInstallation %s/%s", in.Metadata.Namespace, in.Metadata.Name)
	ref := in.Spec.ApplicationRef
	d := c.defs[ref.Name]
	ch := chart{extension: ref.Name, version: strings.TrimPrefix(ref.Version, "v")}
	if d == nil {
		c.note("%s: ApplicationDefinition %s is not among the files: the extension and version are taken from spec.applicationRef (%s %s); check they are the chart's name and version", where, ref.Name, ref.Name, ref.Version)
	} else {
		var found bool
		if ch, found = c.chartOf(d, ref.Version); !found {
			return fmt.Errorf("%s: spec.applicationRef: ApplicationDefinition %s has no Helm source for version %s: publish that version's chart to a Helm repository or OCI registry first", where, ref.Name, ref.Version)
		}
	}
	values, err := valuesOf(in.Spec.Values, in.Spec.ValuesBlock)
	if err != nil {
		return fmt.Errorf("%s: spec.values: %w", where, err)
	}
	target := defaultNamespace(d)
	if in.Spec.Namespace != nil && in.Spec.Namespace.Name != "" {
		target = in.Spec.Namespace.Name
		c.namespaceNotes(where, in.Spec.Namespace)
	}
	if target == "" {
		target = ref.Name
	}
	namespace := c.o.Namespace
	if namespace == "" {
		namespace = in.Metadata.Namespace
	}
	// The installation adopts the release KKP made in place, so it is
	// named after it (spec.adopt.helm.release must be its name).
	release := ReleaseName(in.Metadata.Namespace, in.Metadata.Name)
	inst := &v1alpha1.ExtensionInstallation{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation"},
		ObjectMeta: metav1.ObjectMeta{Name: release, Namespace: namespace},
		Spec: v1alpha1.ExtensionInstallationSpec{
			Extension: ch.extension, Version: ch.version, Cluster: c.o.Cluster,
			TargetNamespace: target, Values: values,
			Adopt: &v1alpha1.Adoption{Helm: &v1alpha1.HelmReleaseAdoption{Release: release}},
		},
	}
	if err := c.deployOptions(where, inst, in, d); err != nil {
		return err
	}
	if iv := in.Spec.ReconciliationInterval; iv != "" && iv != "0s" && iv != "0" {
		dur, err := time.ParseDuration(iv)
		if err != nil {
			return fmt.Errorf("%s: spec.reconciliationInterval %q: %w", where, iv, err)
		}
		inst.Spec.Interval = metav1.Duration{Duration: dur}
	}
	if d != nil && (d.Spec.Default || d.Spec.Enforced) {
		c.note("%s: ApplicationDefinition %s is a default or enforced application: the ExtensionProfile kkp-%s gives it to new clusters; this installation keeps the cluster's own", where, ref.Name, ref.Name)
	}
	c.res.Installations = append(c.res.Installations, inst)
	c.res.Adoptions = append(c.res.Adoptions, Adoption{
		Installation: namespace + "/" + release, Release: release, Namespace: target,
	})
	return nil
}

// deployOptions carries over the Helm deploy options of the installation,
// else of its definition, and notes the ones Annex has no field for.
func (c *converter) deployOptions(where string, inst *v1alpha1.ExtensionInstallation, in *installation, d *definition) error {
	opts := in.Spec.DeployOptions
	if opts == nil && d != nil {
		opts = d.Spec.DefaultDeployOptions
	}
	if opts == nil || opts.Helm == nil {
		return nil
	}
	h := opts.Helm
	if h.Timeout != "" && h.Timeout != "0s" {
		dur, err := time.ParseDuration(h.Timeout)
		if err != nil {
			return fmt.Errorf("%s: deployOptions.helm.timeout %q: %w", where, h.Timeout, err)
		}
		inst.Spec.Timeout = metav1.Duration{Duration: dur}
	}
	if h.Atomic {
		inst.Spec.Install.Remediation = "Uninstall"
	}
	if !h.Wait {
		c.note("%s: deployOptions.helm.wait false has no equivalent: Annex always waits for the objects to be healthy (spec.timeout)", where)
	}
	if h.EnableDNS {
		c.note("%s: deployOptions.helm.enableDNS has no equivalent: Annex renders charts without DNS lookups", where)
	}
	return nil
}

func (c *converter) namespaceNotes(where string, ns *appNamespace) {
	if ns.Create != nil && !*ns.Create {
		c.note("%s: spec.namespace.create false has no equivalent: Annex creates spec.targetNamespace when it is missing", where)
	}
	if len(ns.Labels) > 0 || len(ns.Annotations) > 0 {
		c.note("%s: spec.namespace.labels and annotations are not converted: put the Namespace with them in a chart, or label it once by hand", where)
	}
}

// catalogFor returns the name of the Catalog of h's repository, adding
// it the first time.
func (c *converter) catalogFor(h *helmSource, where string) string {
	url := strings.TrimSuffix(h.URL, "/")
	if cat, ok := c.catalogs[url]; ok {
		return cat.Name
	}
	cat := &v1alpha1.Catalog{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Catalog"},
		ObjectMeta: metav1.ObjectMeta{Name: catalogName(url)},
	}
	if strings.HasPrefix(url, "oci://") {
		cat.Spec.Source.OCI = &v1alpha1.OCISource{Repository: url}
		if h.PlainHTTP != nil && *h.PlainHTTP {
			c.note("%s: source.helm.plainHTTP has no equivalent: Annex reaches OCI registries over HTTPS", where)
		}
	} else {
		cat.Spec.Source.Helm = &v1alpha1.HelmSource{URL: url}
	}
	if h.Insecure != nil && *h.Insecure {
		c.note("%s: source.helm.insecure (no certificate check) has no equivalent: trust the repository's CA instead (the Catalog's secretRef, key ca.crt)", where)
	}
	if len(h.Credentials) > 0 {
		c.note("%s: source.helm.credentials are not converted: create a Secret with keys username and password (or token) and set the Catalog %s's spec.source secretRef", where, cat.Name)
	}
	c.catalogs[url] = cat
	return cat.Name
}

var notNameChar = regexp.MustCompile(`[^a-z0-9]+`)

// catalogName makes a Catalog name of a repository URL: its host and
// path, lower case, dashes for the rest, hash-shortened past 63.
func catalogName(url string) string {
	_, rest, _ := strings.Cut(url, "://")
	name := strings.Trim(notNameChar.ReplaceAllString(strings.ToLower(rest), "-"), "-")
	return names.Bounded("kkp-"+name, names.MaxLabelValue)
}

// ReleaseName is the Helm release name KKP gives the ApplicationInstallation
// name in namespace: "<namespace>-<name>", or, past 53 characters, the
// first 43 characters of name, "-" and 9 hex digits of the SHA-1 of
// namespace.
func ReleaseName(namespace, name string) string {
	full := namespace + "-" + name
	if len(full) <= 53 {
		return full
	}
	sum := sha1.Sum([]byte(namespace)) // #nosec G401 -- matches KKP's names
	if len(name) > 43 {
		name = name[:43]
	}
	return name + "-" + hex.EncodeToString(sum[:])[:9]
}

// valuesOf returns the values given either as JSON (values) or as a YAML
// block (valuesBlock); KKP refuses both at once, and so does this.
func valuesOf(raw json.RawMessage, block string) (*apiextensionsv1.JSON, error) {
	hasRaw := len(raw) > 0 && string(raw) != "{}" && string(raw) != "null"
	if hasRaw && block != "" {
		return nil, errors.New("both values and valuesBlock are set; KKP refuses that too: keep one")
	}
	if hasRaw {
		return &apiextensionsv1.JSON{Raw: raw}, nil
	}
	if strings.TrimSpace(block) == "" {
		return nil, nil
	}
	var v map[string]any
	if err := yaml.Unmarshal([]byte(block), &v); err != nil {
		return nil, fmt.Errorf("valuesBlock is not a YAML map: %w", err)
	}
	if len(v) == 0 {
		return nil, nil
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.JSON{Raw: out}, nil
}

// defaultNamespace is where KKP installs the definition's application when
// the installation names no namespace: its defaultNamespace, else its name.
func defaultNamespace(d *definition) string {
	if d == nil {
		return ""
	}
	if d.Spec.DefaultNamespace != nil && d.Spec.DefaultNamespace.Name != "" {
		return d.Spec.DefaultNamespace.Name
	}
	return d.Metadata.Name
}

// highest returns the highest of versions by SemVer precedence of
// major.minor.patch, ignoring a leading "v"; KKP uses it when a default
// application names no default version.
func highest(versions []appVersionSpec) string {
	best, bestKey := "", [3]int{-1, -1, -1}
	for _, v := range versions {
		var k [3]int
		core, _, _ := strings.Cut(strings.TrimPrefix(v.Version, "v"), "-")
		if _, err := fmt.Sscanf(core, "%d.%d.%d", &k[0], &k[1], &k[2]); err != nil {
			continue
		}
		if slices.Compare(k[:], bestKey[:]) > 0 {
			best, bestKey = v.Version, k
		}
	}
	return best
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
