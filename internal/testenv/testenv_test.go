package testenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	annexv1alpha1 "github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// TestCRDValidation checks that the API server, not a controller, refuses
// malformed Annex objects, and names the field in its answer.
func TestCRDValidation(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "validation"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}

	const oneSource = "spec.source: set exactly one of helm, oci, directory, builtin or olm"
	refused := []struct {
		name string
		obj  client.Object
		want []string // substrings of the API server's error
	}{
		{
			// Two sources are ambiguous: which one does a sync read?
			name: "catalog with helm and builtin",
			obj: &annexv1alpha1.Catalog{
				ObjectMeta: metav1.ObjectMeta{Name: "two-sources"},
				Spec: annexv1alpha1.CatalogSpec{Source: annexv1alpha1.CatalogSource{
					Helm:    &annexv1alpha1.HelmSource{URL: "https://charts.example.com"},
					Builtin: &annexv1alpha1.BuiltinSource{},
				}},
			},
			want: []string{oneSource},
		},
		{
			// A catalog without a source has nothing to sync.
			name: "catalog without a source",
			obj:  &annexv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "no-source"}},
			want: []string{oneSource},
		},
		{
			// A range cut off after its operator is not a range.
			name: "installation with an unfinished version range",
			obj: &annexv1alpha1.ExtensionInstallation{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "bad-range"},
				Spec:       annexv1alpha1.ExtensionInstallationSpec{Extension: "podinfo", Version: ">=1.2 <"},
			},
			want: []string{"spec.version", "should match"},
		},
		{
			// A cert-manager issuer means nothing when Annex issues the
			// certificates itself.
			name: "installation with an issuerRef but no cert-manager",
			obj: &annexv1alpha1.ExtensionInstallation{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "issuer-without-cert-manager"},
				Spec: annexv1alpha1.ExtensionInstallationSpec{Extension: "gadget-operator", WebhookCertificates: &annexv1alpha1.WebhookCertificates{
					IssuerRef: &annexv1alpha1.CertManagerIssuerRef{Name: "corp-ca", Kind: "ClusterIssuer"}}},
			},
			want: []string{"spec.webhookCertificates", "issuerRef names a cert-manager issuer: set provider: CertManager, or remove issuerRef"},
		},
		{
			// An installation must say what it installs.
			name: "installation without an extension",
			obj: &annexv1alpha1.ExtensionInstallation{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "no-extension"},
				Spec:       annexv1alpha1.ExtensionInstallationSpec{Extension: ""},
			},
			want: []string{"spec.extension", "at least 1 chars long"},
		},
		{
			// Annex applies and tracks each of spec.resources by its name.
			name: "installation with a resource without a name",
			obj: &annexv1alpha1.ExtensionInstallation{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "nameless-resource"},
				Spec: annexv1alpha1.ExtensionInstallationSpec{Extension: "memcached-operator", Resources: []annexv1alpha1.CustomResource{{
					Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"cache.example.com/v1alpha1","kind":"Memcached","metadata":{"generateName":"cache-"}}`)},
				}}},
			},
			want: []string{"spec.resources[0].object", "object.metadata.name is required"},
		},
		{
			// An object without a kind is no object.
			name: "installation with a resource without a kind",
			obj: &annexv1alpha1.ExtensionInstallation{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "kindless-resource"},
				Spec: annexv1alpha1.ExtensionInstallationSpec{Extension: "memcached-operator", Resources: []annexv1alpha1.CustomResource{{
					Object: runtime.RawExtension{Raw: []byte(`{"apiVersion":"cache.example.com/v1alpha1","metadata":{"name":"cache"}}`)},
				}}},
			},
			want: []string{"spec.resources[0].object.kind", "Required value"},
		},
		{
			// "1.x" is a range, not a version an artifact can have.
			name: "extension version that is not semver",
			obj:  extension("not-semver", "1.x"),
			want: []string{"spec.versions[0].version", `Invalid value: "1.x"`},
		},
	}
	for _, tc := range refused {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			err := env.Client.Create(ctx, tc.obj)
			if err == nil {
				t.Fatalf("API server accepted %s %q", tc.obj.GetObjectKind().GroupVersionKind().Kind, tc.obj.GetName())
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not mention %q:\n%v", want, err)
				}
			}
		})
	}

	t.Run("accepts an extension with a semantic version", func(t *testing.T) {
		if err := env.Client.Create(ctx, extension("podinfo", "1.2.3")); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("accepts a builtin catalog and applies its defaults", func(t *testing.T) {
		// As kubectl sends it: fields left out are defaulted by the API server.
		obj := createYAML(t, env, `
apiVersion: annex.dev/v1alpha1
kind: Catalog
metadata:
  name: builtin
spec:
  source:
    builtin: {}
`)
		var got annexv1alpha1.Catalog
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &got); err != nil {
			t.Fatal(err)
		}
		if got.Spec.Interval.Duration != 10*time.Minute {
			t.Errorf("spec.interval = %s, want the default 10m", got.Spec.Interval.Duration)
		}
	})

	t.Run("accepts an installation from kubectl and applies its defaults", func(t *testing.T) {
		obj := createYAML(t, env, `
apiVersion: annex.dev/v1alpha1
kind: ExtensionInstallation
metadata:
  namespace: validation
  name: from-yaml
spec:
  extension: podinfo
`)
		var got annexv1alpha1.ExtensionInstallation
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), &got); err != nil {
			t.Fatal(err)
		}
		expectInstallationDefaults(t, &got)
	})

	t.Run("accepts an installation from a Go client and applies its defaults", func(t *testing.T) {
		// Controllers (profiles) create installations with typed clients,
		// which send zero values unless the field is omitted when zero.
		got := &annexv1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "from-go"},
			Spec:       annexv1alpha1.ExtensionInstallationSpec{Extension: "podinfo"},
		}
		if err := env.Client.Create(ctx, got); err != nil {
			t.Fatal(err)
		}
		expectInstallationDefaults(t, got)
	})
}

// TestBinDir checks that the binaries directory follows the pinned version.
func TestBinDir(t *testing.T) {
	dir, err := testenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	version, err := testenv.KubeVersion()
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(version, "v") || !strings.HasSuffix(dir, "/bin/k8s/"+version) {
		t.Errorf("BinDir() = %s, want <repo>/bin/k8s/<version without v> for version %s", dir, version)
	}
}

func expectInstallationDefaults(t *testing.T, got *annexv1alpha1.ExtensionInstallation) {
	t.Helper()
	if got.Spec.Version != "*" {
		t.Errorf("spec.version = %q, want the default \"*\"", got.Spec.Version)
	}
	if got.Spec.Timeout.Duration != 5*time.Minute {
		t.Errorf("spec.timeout = %s, want the default 5m", got.Spec.Timeout.Duration)
	}
	if got.Spec.Uninstall.Timeout.Duration != 5*time.Minute || got.Spec.Uninstall.OnTimeout != annexv1alpha1.UninstallWait {
		t.Errorf("spec.uninstall = %+v, want the defaults timeout 5m, onTimeout Wait", got.Spec.Uninstall)
	}
	if got.Spec.Upgrade.Automatic == nil || !*got.Spec.Upgrade.Automatic {
		t.Errorf("spec.upgrade.automatic = %v, want the default true", got.Spec.Upgrade.Automatic)
	}
}

func extension(name, version string) *annexv1alpha1.Extension {
	return &annexv1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: annexv1alpha1.ExtensionSpec{Versions: []annexv1alpha1.ExtensionVersion{{
			Version: version,
			Source:  annexv1alpha1.ArtifactSource{URL: "https://charts.example.com/" + name + "-" + version + ".tgz"},
		}}},
	}
}

// createYAML creates the object a manifest describes, sending exactly the
// fields it has, as kubectl would.
func createYAML(t *testing.T, env *testenv.Env, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s %q: %v", obj.GetKind(), obj.GetName(), err)
	}
	return obj
}
