package bundle

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/internal/plan"
)

// TestConvertRefusals converts the fixture bundle, changed by each case,
// and expects an *UnsupportedError naming the field.
func TestConvertRefusals(t *testing.T) {
	ownOnly := []InstallMode{{Type: OwnNamespace, Supported: true}, {Type: AllNamespaces, Supported: false}}
	cases := []struct {
		name    string
		change  func(b *Bundle, o *Options)
		field   string
		message string // a fragment of the message
	}{
		// An owned APIService names the Deployment that serves it, an API
		// group and version of its own.
		{"owned APIService without a deployment", func(b *Bundle, _ *Options) {
			b.CSV.Spec.APIServiceDefinitions.Owned = []APIServiceDescription{{Name: "v1alpha1.metrics.example.com", Group: "metrics.example.com", Version: "v1alpha1", Kind: "Metric"}}
		}, "spec.apiservicedefinitions.owned[0].deploymentName", `"" is not a deployment of spec.install.spec.deployments; name the Deployment that serves v1alpha1.metrics.example.com`},
		{"owned APIService of a bad group", func(b *Bundle, _ *Options) {
			b.CSV.Spec.APIServiceDefinitions.Owned = []APIServiceDescription{{Group: "Metrics_Example", Version: "v1alpha1", DeploymentName: "memcached-operator-controller-manager"}}
		}, "spec.apiservicedefinitions.owned[0].group", `"Metrics_Example" is not an API group`},
		{"owned APIService of Annex's group", func(b *Bundle, _ *Options) {
			b.CSV.Spec.APIServiceDefinitions.Owned = []APIServiceDescription{{Group: "annex.dev", Version: "v1alpha1", DeploymentName: "memcached-operator-controller-manager"}}
		}, "spec.apiservicedefinitions.owned[0].group", `"annex.dev" may not be served by an operator`},
		{"owned APIService of a version a CRD serves", func(b *Bundle, _ *Options) {
			b.CSV.Spec.APIServiceDefinitions.Owned = []APIServiceDescription{{Group: "cache.example.com", Version: "v1alpha1", DeploymentName: "memcached-operator-controller-manager"}}
		}, "spec.apiservicedefinitions.owned[0].version", "cache.example.com/v1alpha1 is also served by a CRD of the bundle"},
		{"owned APIService twice", func(b *Bundle, _ *Options) {
			d := APIServiceDescription{Group: "metrics.example.com", Version: "v1alpha1", DeploymentName: "memcached-operator-controller-manager"}
			b.CSV.Spec.APIServiceDefinitions.Owned = []APIServiceDescription{d, d}
		}, "spec.apiservicedefinitions.owned[1].version", "APIService v1alpha1.metrics.example.com is spec.apiservicedefinitions.owned[0] already"},
		// A webhook served by a Deployment the CSV does not run.
		{"webhook of unknown deployment", func(b *Bundle, _ *Options) {
			b.CSV.Spec.WebhookDefinitions = []WebhookDefinition{{GenerateName: "vmemcached.kb.io", Type: ValidatingAdmissionWebhook, DeploymentName: "nope"}}
		}, "spec.webhookdefinitions[0].deploymentName", `"nope" is not a deployment`},
		// A webhook that would intercept every API group.
		{"webhook on all groups", func(b *Bundle, _ *Options) {
			b.CSV.Spec.WebhookDefinitions = []WebhookDefinition{{GenerateName: "vmemcached.kb.io", Type: ValidatingAdmissionWebhook, DeploymentName: "memcached-operator-controller-manager",
				Rules: []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}}}}}}
		}, "spec.webhookdefinitions[0].rules", `API group "*" may not be intercepted`},
		// Conversion of a CRD the bundle does not ship.
		{"conversion of a foreign CRD", func(b *Bundle, o *Options) {
			b.CSV.Spec.WebhookDefinitions = []WebhookDefinition{{GenerateName: "cmemcached.kb.io", Type: ConversionWebhook, DeploymentName: "memcached-operator-controller-manager", ConversionCRDs: []string{"widgets.example.com"}}}
			o.WatchNamespaces = nil
		}, "spec.webhookdefinitions[0].conversionCRDs", `CRD "widgets.example.com" is not in the bundle`},
		// A CRD converts for every namespace: the operator must watch all.
		{"conversion watching one namespace", func(b *Bundle, o *Options) {
			b.CSV.Spec.WebhookDefinitions = []WebhookDefinition{{GenerateName: "cmemcached.kb.io", Type: ConversionWebhook, DeploymentName: "memcached-operator-controller-manager", ConversionCRDs: []string{"memcacheds.cache.example.com"}}}
			o.WatchNamespaces = []string{"operators"}
		}, "spec.webhookdefinitions[0].type", "must watch all namespaces"},
		// All namespaces requested, but the CSV supports only OwnNamespace.
		{"AllNamespaces unsupported", func(b *Bundle, o *Options) {
			b.CSV.Spec.InstallModes = ownOnly
			o.WatchNamespaces = nil
		}, "spec.watchNamespaces", "selects install mode AllNamespaces, which the CSV's spec.installModes do not support (supported: OwnNamespace); set spec.watchNamespaces to [operators]"},
		// Another namespace requested, but only OwnNamespace is supported.
		{"SingleNamespace unsupported", func(b *Bundle, o *Options) {
			b.CSV.Spec.InstallModes = ownOnly
			o.WatchNamespaces = []string{"team-a"}
		}, "spec.watchNamespaces", "install mode SingleNamespace"},
		// Several namespaces need MultiNamespace.
		{"MultiNamespace unsupported", func(b *Bundle, o *Options) {
			b.CSV.Spec.InstallModes = ownOnly
			o.WatchNamespaces = []string{"team-a", "team-b"}
		}, "spec.watchNamespaces", "install mode MultiNamespace"},
		// A CSV without installModes supports nothing.
		{"no install modes", func(b *Bundle, _ *Options) {
			b.CSV.Spec.InstallModes = nil
		}, "spec.watchNamespaces", "supported: none"},
		// "" is how OLM spells all namespaces; Annex spells it as an empty list.
		{"empty watch namespace", func(_ *Bundle, o *Options) {
			o.WatchNamespaces = []string{"team-a", ""}
		}, "spec.watchNamespaces", "leave spec.watchNamespaces empty to watch all namespaces"},
		// Deployments need a name to be created and referred to.
		{"deployment without name", func(b *Bundle, _ *Options) {
			b.CSV.Spec.Install.Spec.Deployments[1].Name = ""
		}, "spec.install.spec.deployments[1].name", "is empty"},
		// A name that is not a DNS subdomain cannot be a Deployment's.
		{"deployment bad name", func(b *Bundle, _ *Options) {
			b.CSV.Spec.Install.Spec.Deployments[0].Name = "Manager_1"
		}, "spec.install.spec.deployments[0].name", "is not a DNS subdomain"},
		// Two deployments of one name would overwrite each other.
		{"duplicate deployment", func(b *Bundle, _ *Options) {
			b.CSV.Spec.Install.Spec.Deployments[1].Name = b.CSV.Spec.Install.Spec.Deployments[0].Name
		}, "spec.install.spec.deployments[1].name", "appears twice"},
		// No deployments: nothing would run the operator.
		{"no deployments", func(b *Bundle, _ *Options) {
			b.CSV.Spec.Install.Spec.Deployments = nil
		}, "spec.install.spec.deployments", "is empty"},
		// An owned CRD the bundle does not ship.
		{"owned CRD missing", func(b *Bundle, _ *Options) {
			b.CSV.Spec.CustomResourceDefinitions.Owned[0].Name = "memcached.cache.example.com"
		}, "spec.customresourcedefinitions.owned[0].name", `CRD "memcached.cache.example.com" is owned by the CSV but not in the bundle's manifests`},
		// The same CRD twice: which one applies would be ambiguous.
		{"duplicate CRD", func(b *Bundle, _ *Options) {
			b.CRDs = append(b.CRDs, b.CRDs[0])
		}, "manifests", "appears twice"},
		// spec.resources creates what this operator manages, nothing else.
		{"resource of an API the bundle does not define", func(_ *Bundle, o *Options) {
			o.Resources = []Resource{memcachedResource("cache.example.com/v1alpha1", "Memcache", "", "cache")}
		}, "spec.resources[0].object.kind", "Memcache (cache.example.com/v1alpha1) is not an API this operator's bundle defines; it defines Memcached (cache.example.com/v1alpha1)"},
		{"resource of a version the CRD does not serve", func(_ *Bundle, o *Options) {
			o.Resources = []Resource{memcachedResource("cache.example.com/v1", "Memcached", "", "cache")}
		}, "spec.resources[0].object.apiVersion", "cache.example.com/v1 is not a served version of memcacheds.cache.example.com; use one of v1alpha1"},
		// Nobody would ever reconcile it.
		{"resource in a namespace the operator does not watch", func(_ *Bundle, o *Options) {
			o.Resources = []Resource{memcachedResource("cache.example.com/v1alpha1", "Memcached", "team-a", "cache")}
		}, "spec.resources[0].object.metadata.namespace", "team-a is not watched by the operator (spec.watchNamespaces: [operators])"},
		{"resource twice", func(_ *Bundle, o *Options) {
			o.Resources = []Resource{
				memcachedResource("cache.example.com/v1alpha1", "Memcached", "", "cache"),
				memcachedResource("cache.example.com/v1alpha1", "Memcached", "operators", "cache"),
			}
		}, "spec.resources[1].object", "Memcached operators/cache is spec.resources[0] already"},
		{"resource with a bad name", func(_ *Bundle, o *Options) {
			o.Resources = []Resource{memcachedResource("cache.example.com/v1alpha1", "Memcached", "", "Cache_1")}
		}, "spec.resources[0].object.metadata.name", "is not a valid object name"},
		// The install namespace must be a namespace name.
		{"bad install namespace", func(_ *Bundle, o *Options) {
			o.InstallNamespace = ""
		}, "spec.namespace", "is not a namespace name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := loadFixture(t, "memcached-operator")
			o := Options{InstallNamespace: "operators", WatchNamespaces: []string{"operators"}, Name: "memcached"}
			tc.change(b, &o)
			_, err := Convert(b, o)
			var ue *UnsupportedError
			if !errors.As(err, &ue) {
				t.Fatalf("got %v, want an *UnsupportedError", err)
			}
			if ue.Field != tc.field || !strings.Contains(ue.Message, tc.message) {
				t.Errorf("got field %q message %q, want field %q and a message containing %q", ue.Field, ue.Message, tc.field, tc.message)
			}
			if !strings.HasPrefix(err.Error(), "bundle memcached-operator.v0.2.0: "+tc.field+": ") {
				t.Errorf("error %q does not name the CSV and the field", err)
			}
		})
	}
}

// A bundle that requires another operator's CRD converts: the resolver
// installs the operator that owns it first, so the plan is the bundle's
// own content, with nothing for the required API.
func TestConvertRequiredCRD(t *testing.T) {
	b := loadFixture(t, "memcached-operator")
	o := Options{InstallNamespace: "operators", WatchNamespaces: []string{"operators"}, Name: "memcached"}
	want, err := Convert(b, o)
	if err != nil {
		t.Fatal(err)
	}
	b.CSV.Spec.CustomResourceDefinitions.Required = []CRDDescription{{Name: "certificates.cert-manager.io", Version: "v1", Kind: "Certificate"}}
	got, err := Convert(b, o)
	if err != nil {
		t.Fatalf("a bundle requiring certificates.cert-manager.io: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the plan changed with a required CRD:\n got %+v\nwant %+v", got, want)
	}
}

func memcachedResource(apiVersion, kind, namespace, name string) Resource {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	_ = unstructured.SetNestedField(obj.Object, int64(3), "spec", "size")
	return Resource{Object: obj}
}

// TestGeneratedNames checks RBAC names are DNS labels, bounded, stable
// and distinct per installation.
func TestGeneratedNames(t *testing.T) {
	b := loadFixture(t, "memcached-operator")
	names := func(o Options) []string {
		p, err := Convert(b, o)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, obj := range p.Objects(plan.TaskApply) {
			if strings.HasSuffix(obj.GetKind(), "Role") && obj.GetNamespace() == "" && !strings.HasPrefix(obj.GetName(), "memcached-operator-") {
				out = append(out, obj.GetName())
			}
		}
		return out
	}
	long := Options{InstallNamespace: "operators", Name: strings.Repeat("a-very-long-installation-name", 3)}
	first := names(long)
	if len(first) == 0 {
		t.Fatal("no generated ClusterRoles")
	}
	for _, n := range first {
		if len(n) > 63 || strings.Contains(n, "--") || strings.HasSuffix(n, "-") {
			t.Errorf("name %q is not a bounded DNS label", n)
		}
	}
	if again := names(long); strings.Join(again, ",") != strings.Join(first, ",") {
		t.Errorf("names changed between runs: %v then %v", first, again)
	}
	// The same installation name in another namespace gets other cluster names.
	other := long
	other.InstallNamespace = "operators-2"
	for i, n := range names(other) {
		if n == first[i] {
			t.Errorf("cluster-scoped name %q is shared by installations in two namespaces", n)
		}
	}
}

// TestConvertDoesNotChangeBundle checks Convert leaves its input alone, so a
// cached bundle can be converted again.
func TestConvertDoesNotChangeBundle(t *testing.T) {
	b := loadFixture(t, "memcached-operator")
	before := dumpBundle(t, b)
	for _, watch := range [][]string{nil, {"operators"}, {"team-a"}} {
		if _, err := Convert(b, Options{InstallNamespace: "operators", WatchNamespaces: watch, Name: "memcached"}); err != nil {
			t.Fatal(err)
		}
	}
	if after := dumpBundle(t, b); after != before {
		t.Errorf("Convert changed the bundle:\n%s\nthen\n%s", before, after)
	}
}

func dumpBundle(t *testing.T, b *Bundle) string {
	t.Helper()
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
