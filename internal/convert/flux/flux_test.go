package flux

import (
	"errors"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func helmRelease(t *testing.T, doc string) *HelmRelease {
	t.Helper()
	hr, err := ParseHelmRelease([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return hr
}

func TestReleaseCoordinates(t *testing.T) {
	long := strings.Repeat("a", 50)
	for _, tc := range []struct {
		name, doc                   string
		release, namespace, storage string
		sourceKind, sourceNS        string
	}{
		{"defaults", `{"metadata":{"name":"web","namespace":"flux-system"},"spec":{"chart":{"spec":{"chart":"podinfo","sourceRef":{"kind":"HelmRepository","name":"podinfo"}}}}}`,
			"web", "flux-system", "flux-system", "HelmRepository", "flux-system"},
		{"target namespace", `{"metadata":{"name":"web","namespace":"flux-system"},"spec":{"targetNamespace":"apps","chart":{"spec":{"chart":"podinfo","sourceRef":{"kind":"HelmRepository","name":"podinfo","namespace":"sources"}}}}}`,
			"apps-web", "apps", "flux-system", "HelmRepository", "sources"},
		{"release and storage named", `{"metadata":{"name":"web","namespace":"flux-system"},"spec":{"releaseName":"podinfo","targetNamespace":"apps","storageNamespace":"apps","chartRef":{"kind":"OCIRepository","name":"podinfo"}}}`,
			"podinfo", "apps", "apps", "OCIRepository", "flux-system"},
		{"long name", `{"metadata":{"name":"` + long + `","namespace":"flux-system"},"spec":{"targetNamespace":"apps","chartRef":{"kind":"OCIRepository","name":"x"}}}`,
			"apps-" + long[:35] + "-", "apps", "flux-system", "OCIRepository", "flux-system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hr := helmRelease(t, tc.doc)
			release := hr.ReleaseName()
			if tc.name == "long name" {
				if len(release) != 53 || !strings.HasPrefix(release, tc.release) {
					t.Errorf("ReleaseName = %q (%d), want %q + 12 hex digits", release, len(release), tc.release)
				}
			} else if release != tc.release {
				t.Errorf("ReleaseName = %q, want %q", release, tc.release)
			}
			if got := hr.ReleaseNamespace(); got != tc.namespace {
				t.Errorf("ReleaseNamespace = %q, want %q", got, tc.namespace)
			}
			if got := hr.StorageNamespace(); got != tc.storage {
				t.Errorf("StorageNamespace = %q, want %q", got, tc.storage)
			}
			if ref := hr.SourceRef(); ref.Kind != tc.sourceKind || ref.Namespace != tc.sourceNS {
				t.Errorf("SourceRef = %+v, want kind %s in %s", ref, tc.sourceKind, tc.sourceNS)
			}
		})
	}
}

func TestParseHelmReleaseRefusals(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"remote cluster": {`{"metadata":{"name":"web","namespace":"f"},"spec":{"kubeConfig":{"secretRef":{"name":"k"}},"chartRef":{"kind":"OCIRepository","name":"x"}}}`, "HelmRelease f/web: spec.kubeConfig"},
		"no chart":       {`{"metadata":{"name":"web","namespace":"f"},"spec":{}}`, "neither spec.chart nor spec.chartRef"},
		"not JSON":       {`{`, "HelmRelease:"},
	} {
		if _, err := ParseHelmRelease([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
}

func source(kind, url, typ string) *Source {
	s := &Source{Kind: kind}
	s.Metadata.Name, s.Metadata.Namespace = "podinfo", "flux-system"
	s.Spec.URL, s.Spec.Type = url, typ
	return s
}

func TestCatalogFor(t *testing.T) {
	for _, tc := range []struct {
		src       *Source
		helm, oci string
	}{
		{source("HelmRepository", "https://stefanprodan.github.io/podinfo/", ""), "https://stefanprodan.github.io/podinfo", ""},
		{source("HelmRepository", "oci://ghcr.io/stefanprodan/charts", "oci"), "", "oci://ghcr.io/stefanprodan/charts"},
		{source("OCIRepository", "oci://ghcr.io/stefanprodan/charts/podinfo", ""), "", "oci://ghcr.io/stefanprodan/charts/podinfo"},
	} {
		cat, _, err := CatalogFor(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		s := cat.Spec.Source
		if (tc.helm != "" && (s.Helm == nil || s.Helm.URL != tc.helm)) || (tc.oci != "" && (s.OCI == nil || s.OCI.Repository != tc.oci)) {
			t.Errorf("CatalogFor(%s %s) = %+v", tc.src.Kind, tc.src.Spec.URL, s)
		}
		if cat.Name != "flux-flux-system-podinfo" {
			t.Errorf("catalog name %q", cat.Name)
		}
		if !Serves(cat, tc.src) {
			t.Errorf("the Catalog made for %s does not serve it", tc.src.Spec.URL)
		}
	}
	if _, _, err := CatalogFor(source("GitRepository", "https://github.com/x/y", "")); !errors.Is(err, ErrNoCatalogSource) {
		t.Errorf("GitRepository: %v, want ErrNoCatalogSource", err)
	}
	withSecret := source("HelmRepository", "https://charts.example.com", "")
	withSecret.Spec.SecretRef = &struct {
		Name string `json:"name"`
	}{Name: "creds"}
	if _, notes, _ := CatalogFor(withSecret); len(notes) != 1 || !strings.Contains(notes[0], "spec.secretRef creds is not copied") {
		t.Errorf("notes %q", notes)
	}
}

func TestServes(t *testing.T) {
	oci := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OCI: &v1alpha1.OCISource{Repository: "oci://ghcr.io/org/charts"}}}}
	for url, want := range map[string]bool{
		"oci://ghcr.io/org/charts":         true,
		"oci://ghcr.io/org/charts/podinfo": true,
		"oci://ghcr.io/org/charts/a/b":     false,
		"oci://ghcr.io/org/chartsmore/x":   false,
		"https://ghcr.io/org/charts":       false,
	} {
		if got := Serves(oci, source("OCIRepository", url, "")); got != want {
			t.Errorf("Serves(oci://ghcr.io/org/charts, %s) = %v, want %v", url, got, want)
		}
	}
	hr := helmRelease(t, `{"metadata":{"name":"web","namespace":"f"},"spec":{"valuesFrom":[{"kind":"ConfigMap","name":"web-values"}],"chartRef":{"kind":"OCIRepository","name":"x"}}}`)
	if notes := hr.Notes(); len(notes) != 1 || !strings.Contains(notes[0], "spec.valuesFrom ConfigMap web-values") {
		t.Errorf("Notes = %q", notes)
	}
}
