// Package flux reads what a Flux HelmRelease says about the Helm release it
// manages — the release's name and namespaces, the chart, its version and
// values, and the Flux source the chart comes from — so that Annex can take
// the release over and serve the chart from a Catalog. It is pure: objects
// in (as JSON), values out; the caller reads and writes the cluster.
package flux

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

const (
	// HelmGroup is the API group of Flux's HelmRelease.
	HelmGroup = "helm.toolkit.fluxcd.io"
	// SourceGroup is the API group of Flux's HelmRepository and OCIRepository.
	SourceGroup = "source.toolkit.fluxcd.io"
)

// HelmRelease is the part of a Flux HelmRelease (helm.toolkit.fluxcd.io/v2)
// that adoption reads.
type HelmRelease struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		ReleaseName      string `json:"releaseName,omitempty"`
		TargetNamespace  string `json:"targetNamespace,omitempty"`
		StorageNamespace string `json:"storageNamespace,omitempty"`
		Suspend          bool   `json:"suspend,omitempty"`
		ValuesFrom       []struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"valuesFrom,omitempty"`
		KubeConfig json.RawMessage `json:"kubeConfig,omitempty"`
		Chart      *struct {
			Spec struct {
				Chart     string    `json:"chart"`
				Version   string    `json:"version,omitempty"`
				SourceRef SourceRef `json:"sourceRef"`
			} `json:"spec"`
		} `json:"chart,omitempty"`
		ChartRef *SourceRef `json:"chartRef,omitempty"`
	} `json:"spec"`
	Status struct {
		History []struct {
			Name         string `json:"name"`
			Namespace    string `json:"namespace"`
			ChartName    string `json:"chartName"`
			ChartVersion string `json:"chartVersion"`
			Status       string `json:"status"`
		} `json:"history,omitempty"`
	} `json:"status"`
}

// SourceRef names the Flux object a HelmRelease's chart comes from.
type SourceRef struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Source is the part of a Flux HelmRepository or OCIRepository
// (source.toolkit.fluxcd.io) that becomes a Catalog.
type Source struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		URL       string `json:"url"`
		Type      string `json:"type,omitempty"` // HelmRepository: "default" or "oci"
		SecretRef *struct {
			Name string `json:"name"`
		} `json:"secretRef,omitempty"`
		Insecure bool `json:"insecure,omitempty"`
	} `json:"spec"`
}

// ParseHelmRelease decodes a HelmRelease from its JSON and checks that
// adoption can use it.
func ParseHelmRelease(raw []byte) (*HelmRelease, error) {
	hr := &HelmRelease{}
	if err := json.Unmarshal(raw, hr); err != nil {
		return nil, fmt.Errorf("HelmRelease: %w", err)
	}
	where := "HelmRelease " + hr.Metadata.Namespace + "/" + hr.Metadata.Name
	if len(hr.Spec.KubeConfig) > 0 && string(hr.Spec.KubeConfig) != "null" {
		return nil, fmt.Errorf("%s: spec.kubeConfig: the release runs on another cluster; register that cluster as a ManagedCluster and adopt its release with annexctl adopt helm --cluster", where)
	}
	if hr.Spec.Chart == nil && hr.Spec.ChartRef == nil {
		return nil, fmt.Errorf("%s: has neither spec.chart nor spec.chartRef", where)
	}
	return hr, nil
}

// ReleaseName is the name of the Helm release the HelmRelease manages, as
// helm-controller names it: spec.releaseName, else
// "<spec.targetNamespace>-<name>" when a target namespace is set, else
// the HelmRelease's name; past 53 characters, the first 40 characters,
// "-" and the first 12 hex digits of the SHA-256 of the whole name.
func (hr *HelmRelease) ReleaseName() string {
	name := hr.Spec.ReleaseName
	if name == "" {
		name = hr.Metadata.Name
		if hr.Spec.TargetNamespace != "" {
			name = hr.Spec.TargetNamespace + "-" + name
		}
	}
	if len(name) <= 53 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:40] + "-" + hex.EncodeToString(sum[:])[:12]
}

// ReleaseNamespace is where the release's objects go: spec.targetNamespace,
// else the HelmRelease's namespace.
func (hr *HelmRelease) ReleaseNamespace() string {
	if hr.Spec.TargetNamespace != "" {
		return hr.Spec.TargetNamespace
	}
	return hr.Metadata.Namespace
}

// StorageNamespace is where Helm keeps the release's storage:
// spec.storageNamespace, else the HelmRelease's namespace.
func (hr *HelmRelease) StorageNamespace() string {
	if hr.Spec.StorageNamespace != "" {
		return hr.Spec.StorageNamespace
	}
	return hr.Metadata.Namespace
}

// SourceRef returns the Flux object the chart comes from, with its
// namespace defaulted to the HelmRelease's.
func (hr *HelmRelease) SourceRef() SourceRef {
	ref := SourceRef{}
	if hr.Spec.ChartRef != nil {
		ref = *hr.Spec.ChartRef
	} else {
		ref = hr.Spec.Chart.Spec.SourceRef
	}
	if ref.Namespace == "" {
		ref.Namespace = hr.Metadata.Namespace
	}
	return ref
}

// Notes says what of the HelmRelease adoption does not carry over:
// valuesFrom sources (the release's values, which helm-controller merged
// from them, are adopted as they are).
func (hr *HelmRelease) Notes() []string {
	var notes []string
	for _, v := range hr.Spec.ValuesFrom {
		notes = append(notes, fmt.Sprintf("HelmRelease %s/%s: spec.valuesFrom %s %s: its values are adopted as the release holds them; to keep reading them from the %s, add it to the installation's spec.valuesFrom", hr.Metadata.Namespace, hr.Metadata.Name, v.Kind, v.Name, v.Kind))
	}
	return notes
}

// ErrNoCatalogSource is returned by CatalogFor for a source kind Annex has
// no catalog for.
var ErrNoCatalogSource = errors.New("no Annex catalog reads this kind of source")

// CatalogFor returns the Catalog that serves the charts of src: a Helm
// repository's URL, or an OCI repository (HelmRepository of type oci, or
// an OCIRepository, whose URL is the chart itself). The name is
// "flux-<namespace>-<name>" of the source, bounded to 63 characters.
// Credentials are not copied: the notes say what to set.
func CatalogFor(src *Source) (*v1alpha1.Catalog, []string, error) {
	where := src.Kind + " " + src.Metadata.Namespace + "/" + src.Metadata.Name
	cat := &v1alpha1.Catalog{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Catalog"},
		ObjectMeta: metav1.ObjectMeta{Name: catalogName(src)},
	}
	url := strings.TrimSuffix(src.Spec.URL, "/")
	switch {
	case src.Kind == "OCIRepository" || (src.Kind == "HelmRepository" && (src.Spec.Type == "oci" || strings.HasPrefix(url, "oci://"))):
		cat.Spec.Source.OCI = &v1alpha1.OCISource{Repository: url}
	case src.Kind == "HelmRepository":
		cat.Spec.Source.Helm = &v1alpha1.HelmSource{URL: url}
	default:
		return nil, nil, fmt.Errorf("%s: %w (HelmRepository and OCIRepository are; publish the chart to one)", where, ErrNoCatalogSource)
	}
	var notes []string
	if src.Spec.SecretRef != nil {
		notes = append(notes, fmt.Sprintf("%s: spec.secretRef %s is not copied: set the Catalog %s's spec.source secretRef to a Secret with its credentials", where, src.Spec.SecretRef.Name, cat.Name))
	}
	if src.Spec.Insecure {
		notes = append(notes, fmt.Sprintf("%s: spec.insecure (plain HTTP) has no equivalent for OCI in Annex", where))
	}
	return cat, notes, nil
}

// Serves reports whether cat reads the same repository as src.
func Serves(cat *v1alpha1.Catalog, src *Source) bool {
	url := strings.TrimSuffix(src.Spec.URL, "/")
	s := cat.Spec.Source
	switch {
	case s.Helm != nil:
		return strings.TrimSuffix(s.Helm.URL, "/") == url
	case s.OCI != nil:
		repo := strings.TrimSuffix(s.OCI.Repository, "/")
		// An OCI catalog serves its repository and those directly below.
		return repo == url || (strings.HasPrefix(url, repo+"/") && !strings.Contains(strings.TrimPrefix(url, repo+"/"), "/"))
	}
	return false
}

var notNameChar = regexp.MustCompile(`[^a-z0-9]+`)

func catalogName(src *Source) string {
	name := strings.Trim(notNameChar.ReplaceAllString(strings.ToLower(src.Metadata.Namespace+"-"+src.Metadata.Name), "-"), "-")
	return names.Bounded("flux-"+name, names.MaxLabelValue)
}
