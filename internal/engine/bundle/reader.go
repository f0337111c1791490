// Package bundle is the engine for OLM registry+v1 bundles: it reads a
// bundle (a file tree, an archive of one, or the olm.bundle.object payloads
// of a File-Based Catalog) and converts it, for an install namespace and a
// set of watched namespaces, into a plan.Plan of plain Kubernetes objects.
// It is pure: values in, a plan out; it never talks to a cluster.
package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/internal/archive"
)

// Bundle is a registry+v1 bundle: its ClusterServiceVersion, its CRDs and
// its other manifests, each of a kind OLM allows in a bundle.
type Bundle struct {
	// Package is the package name (annotation
	// operators.operatorframework.io.bundle.package.v1). FromObjects leaves
	// it empty: in a catalog the package comes from the olm.bundle entry.
	Package string
	// Channels and DefaultChannel are the annotations' channel keys, kept
	// for display; OLM v1 and Annex take channels from the catalog.
	Channels       []string
	DefaultChannel string
	CSV            CSV
	// CRDs are the apiextensions.k8s.io/v1 CustomResourceDefinitions.
	CRDs []*unstructured.Unstructured
	// Others are the remaining manifests, in file then document order.
	Others []*unstructured.Unstructured
}

// CSV is the subset of a ClusterServiceVersion the engine reads.
type CSV struct {
	Metadata CSVMetadata `json:"metadata"`
	Spec     CSVSpec     `json:"spec"`
}

// CSVMetadata is the CSV's metadata.
type CSVMetadata struct {
	Name        string            `json:"name"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// CSVSpec is the CSV's spec.
type CSVSpec struct {
	Version                   string                `json:"version,omitempty"`
	Replaces                  string                `json:"replaces,omitempty"`
	Skips                     []string              `json:"skips,omitempty"`
	MinKubeVersion            string                `json:"minKubeVersion,omitempty"`
	InstallModes              []InstallMode         `json:"installModes,omitempty"`
	Install                   InstallStrategy       `json:"install"`
	CustomResourceDefinitions CRDDefinitions        `json:"customresourcedefinitions,omitempty"`
	APIServiceDefinitions     APIServiceDefinitions `json:"apiservicedefinitions,omitempty"`
	WebhookDefinitions        []WebhookDefinition   `json:"webhookdefinitions,omitempty"`
	RelatedImages             []RelatedImage        `json:"relatedImages,omitempty"`
	NativeAPIs                []GroupVersionKind    `json:"nativeAPIs,omitempty"`
}

// InstallModeType is one of OLM's four install modes.
type InstallModeType string

// The install modes, as a CSV's spec.installModes names them.
const (
	OwnNamespace    InstallModeType = "OwnNamespace"
	SingleNamespace InstallModeType = "SingleNamespace"
	MultiNamespace  InstallModeType = "MultiNamespace"
	AllNamespaces   InstallModeType = "AllNamespaces"
)

// InstallMode says whether the operator supports one install mode.
type InstallMode struct {
	Type      InstallModeType `json:"type"`
	Supported bool            `json:"supported"`
}

// InstallStrategy is spec.install; strategy is always "deployment".
type InstallStrategy struct {
	Strategy string       `json:"strategy,omitempty"`
	Spec     StrategySpec `json:"spec"`
}

// StrategySpec is spec.install.spec.
type StrategySpec struct {
	Deployments        []DeploymentSpec `json:"deployments,omitempty"`
	Permissions        []Permission     `json:"permissions,omitempty"`
	ClusterPermissions []Permission     `json:"clusterPermissions,omitempty"`
}

// DeploymentSpec is one operator Deployment: its name, apps/v1
// DeploymentSpec (kept as JSON data) and metadata.labels.
type DeploymentSpec struct {
	Name  string            `json:"name"`
	Spec  map[string]any    `json:"spec,omitempty"`
	Label map[string]string `json:"label,omitempty"`
}

// Permission is RBAC rules granted to a service account; an empty
// ServiceAccountName means "default".
type Permission struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

// CRDDefinitions is spec.customresourcedefinitions.
type CRDDefinitions struct {
	Owned    []CRDDescription `json:"owned,omitempty"`
	Required []CRDDescription `json:"required,omitempty"`
}

// CRDDescription names one CRD (name is <plural>.<group>) and a version
// and kind of it.
type CRDDescription struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// APIServiceDefinitions is spec.apiservicedefinitions.
type APIServiceDefinitions struct {
	Owned    []APIServiceDescription `json:"owned,omitempty"`
	Required []APIServiceDescription `json:"required,omitempty"`
}

// APIServiceDescription names an aggregated API.
type APIServiceDescription struct {
	Name           string `json:"name"`
	Group          string `json:"group"`
	Version        string `json:"version"`
	Kind           string `json:"kind"`
	DeploymentName string `json:"deploymentName,omitempty"`
	// ContainerPort is the port the Deployment's aggregated API server
	// listens on (owned APIServices); 443 when unset.
	ContainerPort int32 `json:"containerPort,omitempty"`
}

// RelatedImage is an image the operator uses.
type RelatedImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// GroupVersionKind names an API (nativeAPIs).
type GroupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// Annotation keys of metadata/annotations.yaml.
const (
	AnnotationMediaType      = "operators.operatorframework.io.bundle.mediatype.v1"
	AnnotationPackage        = "operators.operatorframework.io.bundle.package.v1"
	AnnotationChannels       = "operators.operatorframework.io.bundle.channels.v1"
	AnnotationDefaultChannel = "operators.operatorframework.io.bundle.channel.default.v1"
)

const (
	annotationsFile = "metadata/annotations.yaml"
	manifestsDir    = "manifests/"
	csvKind         = "ClusterServiceVersion"
	csvAPIVersion   = "operators.coreos.com/v1alpha1"
	crdKind         = "CustomResourceDefinition"
	crdAPIVersion   = "apiextensions.k8s.io/v1"
)

// allowedKinds are the kinds OLM allows in a bundle besides the CSV and
// CRDs (operator-registry's supported resources), with whether each is
// namespaced. VerticalPodAutoscaler is namespaced although OLM's list says
// otherwise. Deployments are not here: they come only from the CSV.
var allowedKinds = map[string]bool{
	"Secret":                true,
	"ConfigMap":             true,
	"Service":               true,
	"ServiceAccount":        true,
	"Role":                  true,
	"RoleBinding":           true,
	"PrometheusRule":        true,
	"ServiceMonitor":        true,
	"PodMonitor":            true,
	"PodDisruptionBudget":   true,
	"NetworkPolicy":         true,
	"VerticalPodAutoscaler": true,
	"ClusterRole":           false,
	"ClusterRoleBinding":    false,
	"PriorityClass":         false,
	"ConsoleYAMLSample":     false,
	"ConsoleQuickStart":     false,
	"ConsoleCLIDownload":    false,
	"ConsoleLink":           false,
	"ConsolePlugin":         false,
}

// Limits on what Load and LoadArchive read. Published bundles are well
// under a megabyte; CRDs are the largest files.
const (
	MaxArchiveBytes  = 32 << 20
	MaxExpandedBytes = 64 << 20
	MaxFileBytes     = 8 << 20
	MaxFiles         = 1000
)

// LoadError reports a bundle that cannot be read: malformed files, a
// missing CSV or annotations, a kind OLM does not allow in a bundle, an
// archive that breaks the limits. It is permanent for these bytes.
type LoadError struct {
	// File is the bundle file at fault, empty when the bundle as a whole is.
	File    string
	Message string
}

func (e *LoadError) Error() string {
	if e.File == "" {
		return "registry+v1 bundle: " + e.Message
	}
	return fmt.Sprintf("registry+v1 bundle file %s: %s", e.File, e.Message)
}

// Permanent marks the error as final: the same bytes fail again.
func (e *LoadError) Permanent() bool { return true }

func loadErr(file, format string, args ...any) error {
	return &LoadError{File: file, Message: fmt.Sprintf(format, args...)}
}

// Load reads a registry+v1 bundle from its files, keyed by slash paths
// relative to the bundle root ("manifests/csv.yaml",
// "metadata/annotations.yaml"; a leading "./" is fine). Files outside
// manifests/ and metadata/ are ignored, as OLM does. It requires
// metadata/annotations.yaml with the package key (and, when set, media
// type registry+v1), a flat manifests/ folder of YAML or JSON documents
// holding exactly one ClusterServiceVersion, CRDs of apiextensions.k8s.io/v1
// and otherwise only the kinds OLM allows. Errors are *LoadError.
func Load(files map[string][]byte) (*Bundle, error) {
	clean := map[string][]byte{}
	for name, data := range files {
		n, err := cleanPath(name)
		if err != nil {
			return nil, loadErr(name, "%v", err)
		}
		if len(data) > MaxFileBytes {
			return nil, loadErr(n, "is %d bytes, more than the limit of %d bytes per file", len(data), MaxFileBytes)
		}
		clean[n] = data
	}
	ann, ok := clean[annotationsFile]
	if !ok {
		return nil, loadErr("", "has no %s; a registry+v1 bundle declares its package there (operators.operatorframework.io.bundle.package.v1)", annotationsFile)
	}
	b := &Bundle{}
	if err := b.readAnnotations(ann); err != nil {
		return nil, err
	}
	var names []string
	for n := range clean {
		if rest, ok := strings.CutPrefix(n, manifestsDir); ok {
			if strings.Contains(rest, "/") {
				return nil, loadErr(n, "is in a subfolder of manifests/; registry+v1 manifests/ is flat, move the file up")
			}
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, loadErr("", "has no files in manifests/; a registry+v1 bundle holds its ClusterServiceVersion there")
	}
	sort.Strings(names)
	var docs []document
	for _, n := range names {
		d, err := decodeDocuments(n, clean[n])
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	if err := b.sortManifests(docs); err != nil {
		return nil, err
	}
	return b, nil
}

// FromObjects reads a bundle from the olm.bundle.object payloads of a
// File-Based Catalog entry, each one JSON (or YAML) manifest. The caller
// sets Package from the olm.bundle's package. The manifests are checked as
// Load checks them. Errors are *LoadError.
func FromObjects(objs [][]byte) (*Bundle, error) {
	var docs []document
	for i, data := range objs {
		name := fmt.Sprintf("olm.bundle.object[%d]", i)
		if len(data) > MaxFileBytes {
			return nil, loadErr(name, "is %d bytes, more than the limit of %d bytes per object", len(data), MaxFileBytes)
		}
		d, err := decodeDocuments(name, data)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	b := &Bundle{}
	if err := b.sortManifests(docs); err != nil {
		return nil, err
	}
	return b, nil
}

// LoadArchive reads a bundle from a tar or gzipped tar of its tree: the
// tree at the archive's root (as in a bundle image layer) or under one
// top-level folder. It refuses archives over MaxArchiveBytes or expanding
// past MaxExpandedBytes, files over MaxFileBytes, more than MaxFiles
// entries, absolute or parent-relative paths, links, special files and
// duplicate entries. Then it is Load. Errors are *LoadError.
func LoadArchive(data []byte) (*Bundle, error) {
	if len(data) > MaxArchiveBytes {
		return nil, loadErr("", "archive of %d bytes is more than the limit of %d bytes", len(data), MaxArchiveBytes)
	}
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, loadErr("", "archive is not valid gzip (%v)", err)
		}
		r = zr
	}
	files := map[string][]byte{}
	lim := archive.Limits{MaxExpandedBytes: MaxExpandedBytes, MaxFileBytes: MaxFileBytes, MaxFiles: MaxFiles}
	err := archive.Walk(r, lim, func(e *archive.Entry) error {
		hdr := e.Header
		if hdr.Typeflag == tar.TypeDir || hdr.Typeflag == tar.TypeXGlobalHeader {
			return nil
		}
		switch archive.CheckType(hdr) {
		case archive.SymbolicLink, archive.HardLink:
			return loadErr(hdr.Name, "is a link (to %q); a bundle archive holds regular files only", hdr.Linkname)
		case archive.SpecialFile:
			return loadErr(hdr.Name, "is a special file (tar type %q); a bundle archive holds regular files only", string(hdr.Typeflag))
		}
		name, err := cleanPath(hdr.Name)
		if err != nil {
			return loadErr(hdr.Name, "%v", err)
		}
		if _, dup := files[name]; dup {
			return loadErr(hdr.Name, "appears twice in the archive; which copy counts would be ambiguous")
		}
		content, err := e.ReadAll()
		if err != nil {
			return archiveErr(name, err)
		}
		files[name] = content
		return nil
	})
	if err != nil {
		return nil, archiveErr("", err)
	}
	return Load(bundleRoot(files))
}

// bundleRoot strips one top-level folder when metadata/annotations.yaml is
// not at the root but under that folder.
func bundleRoot(files map[string][]byte) map[string][]byte {
	if _, ok := files[annotationsFile]; ok {
		return files
	}
	top := ""
	for name := range files {
		first, _, nested := strings.Cut(name, "/")
		if !nested || (top != "" && first != top) {
			return files
		}
		top = first
	}
	out := map[string][]byte{}
	for name, data := range files {
		out[strings.TrimPrefix(name, top+"/")] = data
	}
	return out
}

// cleanPath strips a leading "./" or "/" (image layers use either) and
// refuses paths that could leave the bundle.
func cleanPath(name string) (string, error) {
	name = strings.TrimLeft(archive.TrimDotSlash(name), "/")
	switch archive.CheckName(name) {
	case 0:
		return name, nil
	case archive.Backslash:
		return "", errors.New(`contains a backslash; bundle paths use "/"`)
	case archive.ControlCharacters:
		return "", errors.New("contains control characters")
	case archive.ParentPath:
		return "", errors.New(`contains ".."; bundle paths stay inside the bundle`)
	}
	return "", errors.New("is not a clean relative path")
}

// archiveErr words the refusals of archive.Walk for a bundle; file is
// the entry at fault, and errors of the bundle's own pass as they are.
func archiveErr(file string, err error) error {
	var e *archive.Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Problem {
	case archive.TooExpanded:
		return loadErr("", "archive expands to more than %d bytes (a decompression bomb?); a bundle is far smaller", MaxExpandedBytes)
	case archive.TooManyEntries:
		return loadErr("", "archive has more than %d entries; a bundle has far fewer files", MaxFiles)
	case archive.FileTooLarge:
		size := e.Size
		if size == 0 {
			// The body ran past the limit: Load would say so of it.
			size = MaxFileBytes + 1
		}
		return loadErr(file, "is %d bytes, more than the limit of %d bytes per file", size, MaxFileBytes)
	}
	return loadErr(file, "is not a valid tar archive (%v)", e.Err)
}

// readAnnotations reads metadata/annotations.yaml.
func (b *Bundle) readAnnotations(data []byte) error {
	var f struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return loadErr(annotationsFile, "is not valid YAML of the form annotations: {key: value} (%v)", err)
	}
	a := f.Annotations
	if mt, ok := a[AnnotationMediaType]; ok && mt != "registry+v1" {
		return loadErr(annotationsFile, "%s is %q; this engine reads registry+v1 bundles only", AnnotationMediaType, mt)
	}
	b.Package = a[AnnotationPackage]
	if b.Package == "" {
		return loadErr(annotationsFile, "%s is missing or empty; set it to the package name", AnnotationPackage)
	}
	for c := range strings.SplitSeq(a[AnnotationChannels], ",") {
		if c = strings.TrimSpace(c); c != "" {
			b.Channels = append(b.Channels, c)
		}
	}
	b.DefaultChannel = a[AnnotationDefaultChannel]
	return nil
}

// document is one decoded manifest and where it came from.
type document struct {
	file string
	obj  *unstructured.Unstructured
}

// decodeDocuments splits a YAML or JSON file into its non-empty documents.
func decodeDocuments(file string, data []byte) ([]document, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []document
	for i := 0; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, loadErr(file, "document %d is not valid YAML or JSON (%v)", i+1, err)
		}
		if len(m) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: fixNumbers(m).(map[string]any)}
		if obj.GetKind() == "" || obj.GetAPIVersion() == "" {
			return nil, loadErr(file, "document %d has no apiVersion or kind; every manifest is a Kubernetes object", i+1)
		}
		out = append(out, document{file: file, obj: obj})
	}
}

// sortManifests files the documents as CSV, CRDs and Others, refusing
// kinds OLM does not allow in a bundle.
func (b *Bundle) sortManifests(docs []document) error {
	csvFile := ""
	for _, d := range docs {
		kind, apiVersion := d.obj.GetKind(), d.obj.GetAPIVersion()
		switch kind {
		case csvKind:
			if apiVersion != csvAPIVersion {
				return loadErr(d.file, "ClusterServiceVersion has apiVersion %q; registry+v1 uses %s", apiVersion, csvAPIVersion)
			}
			if csvFile != "" {
				return loadErr(d.file, "holds a second ClusterServiceVersion (the first is in %s); a bundle has exactly one", csvFile)
			}
			csvFile = d.file
			raw, err := json.Marshal(d.obj.Object)
			if err != nil {
				return loadErr(d.file, "%v", err)
			}
			if err := json.Unmarshal(raw, &b.CSV); err != nil {
				return loadErr(d.file, "ClusterServiceVersion %q does not match the CSV schema (%v)", d.obj.GetName(), err)
			}
		case crdKind:
			if apiVersion != crdAPIVersion {
				return loadErr(d.file, "CustomResourceDefinition %q has apiVersion %q; only %s is served since Kubernetes 1.22, convert it", d.obj.GetName(), apiVersion, crdAPIVersion)
			}
			b.CRDs = append(b.CRDs, d.obj)
		default:
			if _, ok := allowedKinds[kind]; !ok {
				return loadErr(d.file, "%s %q is not a kind a registry+v1 bundle may hold (Deployments come from the CSV's spec.install.spec.deployments); remove it or ship it another way", kind, d.obj.GetName())
			}
			b.Others = append(b.Others, d.obj)
		}
	}
	if csvFile == "" {
		return loadErr("", "has no ClusterServiceVersion in manifests/; a registry+v1 bundle needs one")
	}
	if b.CSV.Metadata.Name == "" {
		return loadErr(csvFile, "ClusterServiceVersion has no metadata.name; set it, e.g. <package>.v<version>")
	}
	return nil
}
