// Package helm is the Helm engine: it turns a Helm chart archive and
// values into Kubernetes objects with the Helm SDK's template engine.
// Helm is used as a library only: nothing here talks to a cluster, stores
// a release or decides what to install.
package helm

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartloader "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	annexarchive "github.com/annex-platform/annex/internal/archive"
	"github.com/annex-platform/annex/internal/values"
)

// Input is everything a render needs; Render performs no I/O.
type Input struct {
	// Archive is the chart archive (.tgz) as fetched.
	Archive []byte
	// Name is the release name, the ExtensionInstallation's name.
	Name string
	// Namespace is .Release.Namespace. Render never sets it on objects.
	Namespace string
	// Values are the user values, already merged (spec.values ⊕ valuesFrom); may be nil.
	Values map[string]any
	// KubeVersion is the cluster's version (e.g. "v1.37.1") for
	// .Capabilities.KubeVersion and the chart's kubeVersion constraint; empty
	// means Helm's default version and no constraint check.
	KubeVersion string
	// APIVersions are the target cluster's API versions, "group/version"
	// and "group/version/Kind" as Helm lists them from discovery, for
	// .Capabilities.APIVersions; nil means Helm's default set.
	APIVersions []string
	// IsUpgrade selects .Release.IsUpgrade instead of .Release.IsInstall.
	IsUpgrade bool
	// ExtensionRef names the extension in errors, e.g. "podinfo 6.5.0".
	ExtensionRef string
}

// Result is the rendered chart. The same Input always gives an identical
// Result, digests included, as long as the chart's templates are themselves
// deterministic (no randAlphaNum, uuidv4, now, genCA, ...).
type Result struct {
	// CRDs come from the crds/ folders of the chart and its enabled
	// subcharts, in archive file order then document order. They are not templated.
	CRDs []*unstructured.Unstructured
	// Objects are the rendered templates ordered by template path, then
	// document order. Test hooks are dropped; other objects keep their
	// helm.sh/hook annotations for the applier to map onto phases, and keep
	// exactly the namespace the template gave (often none).
	Objects []*unstructured.Unstructured
	// Values are the effective values: chart defaults ⊕ Input.Values with
	// Helm's coalescing (a null deletes a key), including subchart sections.
	Values map[string]any
	// ValuesDigest is "sha256:<hex>" of the canonical JSON of Values.
	ValuesDigest string
	// ManifestDigest is "sha256:<hex>" over the canonical JSON of CRDs then Objects.
	ManifestDigest string
	// Notes is the root chart's rendered templates/NOTES.txt, if any.
	Notes string
	// ChartName and ChartVersion come from Chart.yaml.
	ChartName, ChartVersion string
}

// Render loads in.Archive, validates the effective values against the
// chart's schemas, renders the templates and parses the output.
//
// Errors: *ArchiveError when the archive is unusable (the artifact must
// change), *ValuesError when values break a schema (the user must change
// values), *RenderError when templates fail or produce invalid objects. Any
// other error means the Input itself is malformed (an unparsable
// KubeVersion, values that are not JSON).
//
// Rendering is safe for untrusted charts: `lookup` always returns an empty
// map, `getHostByName` returns "", `env`/`expandenv` do not exist, and
// $refs in values.schema.json are never fetched.
func Render(in Input) (*Result, error) {
	ch, err := loadChart(in.Archive)
	if err != nil {
		return nil, &ArchiveError{Extension: in.ExtensionRef, Err: err}
	}
	if err := checkInstallable(ch); err != nil {
		return nil, &ArchiveError{Extension: in.ExtensionRef, Err: err}
	}

	caps := common.DefaultCapabilities.Copy()
	if in.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(in.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("render extension %q: invalid Kubernetes version %q: %w", in.ExtensionRef, in.KubeVersion, err)
		}
		caps.KubeVersion = *kv
		if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, kv.String()) {
			return nil, &RenderError{Extension: in.ExtensionRef, Message: fmt.Sprintf(
				"chart requires kubeVersion %q, which Kubernetes %s does not satisfy; pick a chart version that supports this cluster", c, kv.Version)}
		}
	}

	if in.APIVersions != nil {
		caps.APIVersions = common.VersionSet(in.APIVersions)
	}

	userValues, err := values.Normalize(in.Values)
	if err != nil {
		return nil, fmt.Errorf("render extension %q: values cannot be encoded as JSON: %w", in.ExtensionRef, err)
	}
	// Drops subcharts whose condition or tags are false and applies import-values.
	if err := chartutil.ProcessDependencies(ch, userValues); err != nil {
		return nil, &RenderError{Extension: in.ExtensionRef, Message: "process subcharts: " + err.Error()}
	}

	opts := common.ReleaseOptions{
		Name:      in.Name,
		Namespace: in.Namespace,
		Revision:  1,
		IsInstall: !in.IsUpgrade,
		IsUpgrade: in.IsUpgrade,
	}
	// Schema validation is done below by validateValues, which never loads
	// remote $refs and reports one violation per field.
	top, err := commonutil.ToRenderValuesWithSchemaValidation(ch, userValues, opts, caps, true)
	if err != nil {
		return nil, &RenderError{Extension: in.ExtensionRef, Message: "coalesce values: " + err.Error()}
	}
	effective, err := top.Table("Values")
	if err != nil {
		return nil, &RenderError{Extension: in.ExtensionRef, Message: "coalesce values: " + err.Error()}
	}
	violations, err := validateValues(ch, effective, nil)
	if err != nil {
		return nil, &ArchiveError{Extension: in.ExtensionRef, Err: err}
	}
	if len(violations) > 0 {
		return nil, &ValuesError{Extension: in.ExtensionRef, Violations: violations}
	}

	// Taken before rendering: templates can mutate .Values (sprig's set/unset).
	res := &Result{
		Values:       values.DeepCopy(effective.AsMap()).(map[string]any),
		ChartName:    ch.Metadata.Name,
		ChartVersion: ch.Metadata.Version,
	}
	if res.ValuesDigest, err = values.Digest(res.Values); err != nil {
		return nil, fmt.Errorf("render extension %q: digest values: %w", in.ExtensionRef, err)
	}

	if res.CRDs, err = crdObjects(ch); err != nil {
		return nil, &RenderError{Extension: in.ExtensionRef, Template: templateOf(err), Message: err.Error()}
	}

	// A zero Engine has no client provider (lookup returns an empty map) and
	// EnableDNS false (getHostByName returns "").
	var eng engine.Engine
	files, err := eng.RenderWithContext(context.Background(), ch, top)
	if err != nil {
		return nil, &RenderError{Extension: in.ExtensionRef, Template: findTemplate(ch, err.Error()), Message: err.Error()}
	}
	res.Notes = files[path.Join(ch.Name(), "templates", "NOTES.txt")]
	if res.Objects, err = renderedObjects(files); err != nil {
		return nil, &RenderError{Extension: in.ExtensionRef, Template: templateOf(err), Message: err.Error()}
	}

	if res.ManifestDigest, err = values.ManifestDigest(res.CRDs, res.Objects); err != nil {
		return nil, fmt.Errorf("render extension %q: digest manifest: %w", in.ExtensionRef, err)
	}
	return res, nil
}

// loadChart loads a chart of API version v1 or v2 from archive bytes. The
// archive is walked with annexarchive.CheckArchive (the catalog's check)
// first, so Helm's loader never sees links, absolute or parent paths,
// duplicate entries or more bytes than the default limits. An archive
// checked and unpacked before is not again (checkedArchives).
func loadChart(data []byte) (*chart.Chart, error) {
	files, err := archiveFilesOf(data)
	if err != nil {
		return nil, err
	}
	idx := slices.IndexFunc(files, func(f *archive.BufferedFile) bool { return f.Name == "Chart.yaml" })
	if idx < 0 {
		return nil, errors.New("no Chart.yaml at the top of the archive")
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := yaml.Unmarshal(files[idx].Data, &head); err != nil {
		return nil, fmt.Errorf("cannot read Chart.yaml: %w", err)
	}
	switch head.APIVersion {
	case chart.APIVersionV1, chart.APIVersionV2, "":
	default:
		return nil, fmt.Errorf("chart apiVersion %q is not supported; use apiVersion v2", head.APIVersion)
	}
	ch, err := chartloader.LoadFiles(files)
	if err != nil {
		return nil, err
	}
	sortDependencies(ch)
	return ch, nil
}

// archiveFilesOf checks and unpacks data, or returns the files of the
// same archive checked before.
func archiveFilesOf(data []byte) ([]*archive.BufferedFile, error) {
	sum := digest(sha256.Sum256(data))
	if files, ok := checkedArchives.get(sum); ok {
		return files, nil
	}
	if err := annexarchive.CheckArchive(data, annexarchive.Limits{}); err != nil {
		return nil, err
	}
	files, err := archive.LoadArchiveFiles(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	checkedArchives.put(sum, files)
	return files, nil
}

// sortDependencies orders subcharts by name and version at every level. The
// loader collects them from a map, so without this the order of subchart
// CRDs, and the choice among same-named subcharts, would vary between runs.
func sortDependencies(ch *chart.Chart) {
	deps := slices.Clone(ch.Dependencies())
	slices.SortStableFunc(deps, func(a, b *chart.Chart) int {
		return cmp.Or(strings.Compare(a.Name(), b.Name()), strings.Compare(a.Metadata.Version, b.Metadata.Version))
	})
	for _, d := range deps {
		sortDependencies(d)
	}
	ch.SetDependencies(deps...)
}

// checkInstallable refuses library charts and charts whose declared
// subcharts are missing from charts/, as `helm install` does.
func checkInstallable(ch *chart.Chart) error {
	if ch.Metadata.Type == "library" {
		return fmt.Errorf("chart %q is a library chart, which cannot be installed", ch.Name())
	}
	for _, dep := range ch.Metadata.Dependencies {
		if dep == nil {
			continue
		}
		present := slices.ContainsFunc(ch.Dependencies(), func(c *chart.Chart) bool { return c.Name() == dep.Name })
		if !present {
			return fmt.Errorf("chart %q declares dependency %q but charts/ does not contain it; package the chart with its dependencies (helm dependency build)", ch.Name(), dep.Name)
		}
	}
	return nil
}

// fileError ties a parse error to the chart file it came from.
type fileError struct {
	file string
	err  error
}

func (e *fileError) Error() string { return e.err.Error() }

// templateOf returns the file a fileError names, or "".
func templateOf(err error) string {
	if fe, ok := errors.AsType[*fileError](err); ok {
		return fe.file
	}
	return ""
}

// crdObjects parses the crds/ files of ch and its enabled subcharts.
func crdObjects(ch *chart.Chart) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		objs, err := parseObjects(string(crd.File.Data))
		if err != nil {
			return nil, &fileError{file: crd.Filename, err: err}
		}
		out = append(out, objs...)
	}
	return out, nil
}

// renderedObjects parses the engine's output in template path order,
// skipping NOTES.txt, partials and test hooks.
func renderedObjects(files map[string]string) ([]*unstructured.Unstructured, error) {
	names := make([]string, 0, len(files))
	for name := range files {
		base := path.Base(name)
		if base == "NOTES.txt" || strings.HasPrefix(base, "_") {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var out []*unstructured.Unstructured
	for _, name := range names {
		objs, err := parseObjects(files[name])
		if err != nil {
			return nil, &fileError{file: name, err: err}
		}
		for _, o := range objs {
			if !isTestHook(o) {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// findTemplate returns the chart path of the template an engine error
// message mentions first, or "" if it names none.
func findTemplate(ch *chart.Chart, msg string) string {
	best, bestAt := "", -1
	var walk func(c *chart.Chart)
	walk = func(c *chart.Chart) {
		for _, t := range c.Templates {
			name := path.Join(c.ChartFullPath(), t.Name)
			at := strings.Index(msg, name)
			if at >= 0 && (bestAt < 0 || at < bestAt || at == bestAt && len(name) > len(best)) {
				best, bestAt = name, at
			}
		}
		for _, d := range c.Dependencies() {
			walk(d)
		}
	}
	walk(ch)
	return best
}
