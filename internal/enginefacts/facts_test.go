package enginefacts_test

import (
	"cmp"
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/enginefacts"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/target"
	"github.com/annex-platform/annex/internal/testenv"
)

// TestOf reads every fact from a real API server, which is the hub and
// the target cluster at once.
func TestOf(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "certs"}, Data: map[string][]byte{"tls.crt": []byte("pem")}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	servers, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cluster := apiServer{discovery: servers, client: env.Client}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "podinfo"}}
	inst.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":2}`)}
	of := func(inst *v1alpha1.ExtensionInstallation) *enginefacts.Of {
		return &enginefacts.Of{Ctx: ctx, Hub: env.Client, Installation: inst, Target: cluster,
			Extensions: []v1alpha1.Extension{{ObjectMeta: metav1.ObjectMeta{Name: "base"}, Spec: v1alpha1.ExtensionSpec{
				Versions: []v1alpha1.ExtensionVersion{{Version: "1.2.0"}}}}},
			Installed: func() (map[string]any, error) { return map[string]any{"size": "large"}, nil },
			Clock:     func() time.Time { return at }}
	}
	f := of(inst)

	values, err := f.Values()
	if err != nil || values["replicas"] != float64(2) {
		t.Errorf("Values() = %v, %v; want replicas 2", values, err)
	}
	versions, err := f.APIVersions()
	if err != nil || !contains(versions, "v1") {
		t.Errorf("APIVersions() = %v, %v; want v1 among them", versions, err)
	}
	served, err := f.Serves(schema.GroupVersionKind{Version: "v1", Kind: "Secret"})
	if err != nil || !served {
		t.Errorf("Serves(v1 Secret) = %v, %v; want true", served, err)
	}
	data, err := f.Secret("default", "certs")
	if err != nil || string(data["tls.crt"]) != "pem" {
		t.Errorf("Secret(default/certs) = %v, %v; want tls.crt pem", data, err)
	}
	if data, err := f.Secret("default", "absent"); err != nil || data != nil {
		t.Errorf("Secret(default/absent) = %v, %v; want nil, nil", data, err)
	}
	if params, err := f.InstalledParams(); err != nil || params["size"] != "large" {
		t.Errorf("InstalledParams() = %v, %v; want size large", params, err)
	}
	if got := f.Now(); !got.Equal(at) {
		t.Errorf("Now() = %v, want %v", got, at)
	}
	if f.ValuesProblem != nil || f.APIVersionsErr != nil {
		t.Errorf("nothing failed, yet ValuesProblem = %v, APIVersionsErr = %v", f.ValuesProblem, f.APIVersionsErr)
	}

	// A required values source that is not there yet waits: the engine
	// gets an error, the caller the problem.
	missing := inst.DeepCopy()
	missing.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: "absent"}}
	f = of(missing)
	if _, err := f.Values(); err == nil || f.ValuesProblem == nil || !f.ValuesProblem.Wait {
		t.Errorf("Values() with a missing Secret: err %v, ValuesProblem %+v; want an error and a problem that waits", err, f.ValuesProblem)
	}
}

// TestOfBase chooses a package's base among the Extensions on offer.
func TestOfBase(t *testing.T) {
	f := &enginefacts.Of{Extensions: []v1alpha1.Extension{{ObjectMeta: metav1.ObjectMeta{Name: "base"}, Spec: v1alpha1.ExtensionSpec{
		Versions: []v1alpha1.ExtensionVersion{{Version: "2.0.0"}, {Version: "1.2.0"}}}}}} // highest first, as catalogs list them
	for _, tc := range []struct {
		name, base, versionRange string
		want                     string // the version chosen; "" when refused
		wait                     bool   // the refusal may resolve later
	}{
		// The highest version in range.
		{name: "in range", base: "base", versionRange: "^1", want: "1.2.0"},
		// No range means any version.
		{name: "any", base: "base", want: "2.0.0"},
		// No version in range: a catalog may offer one later.
		{name: "none in range", base: "base", versionRange: "^3", wait: true},
		// No such extension: it may come later too.
		{name: "unknown", base: "other", versionRange: "^1", wait: true},
		// Not a range: the package must change.
		{name: "bad range", base: "base", versionRange: "not a range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := f.Base(tc.base, tc.versionRange)
			var refused *resolve.BaseError
			switch {
			case tc.want != "" && (err != nil || v.Version != tc.want):
				t.Errorf("Base(%q, %q) = %q, %v; want %q", tc.base, tc.versionRange, v.Version, err, tc.want)
			case tc.want == "" && !errors.As(err, &refused):
				t.Errorf("Base(%q, %q) = %q, %v; want a *resolve.BaseError", tc.base, tc.versionRange, v.Version, err)
			case tc.want == "" && refused.Wait != tc.wait:
				t.Errorf("Base(%q, %q) refused with Wait %v, want %v: %v", tc.base, tc.versionRange, refused.Wait, tc.wait, err)
			}
		})
	}
}

// apiServer is the test API server as the target cluster, read with the
// test's clients: what Of asks of a target.Cluster (its other methods
// are not called).
type apiServer struct {
	target.Cluster
	discovery *discovery.DiscoveryClient
	client    client.Client
}

func (a apiServer) APIVersions(context.Context) ([]string, error) {
	groups, err := a.discovery.ServerGroups()
	if err != nil {
		return nil, err
	}
	return metav1.ExtractGroupVersions(groups), nil
}

func (a apiServer) Serves(_ context.Context, gvk schema.GroupVersionKind) (kubeapis.Answer, error) {
	_, err := a.client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return kubeapis.Answer{}, nil
	}
	return kubeapis.Answer{Served: err == nil}, err
}

func (a apiServer) Applier() target.Applier { return liveReader{client: a.client} }

// liveReader reads live objects for Of.Secret (the applier's other
// methods are not called).
type liveReader struct {
	target.Applier
	client client.Client
}

func (l liveReader) Live(ctx context.Context, defaultNamespace string, objects []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var live []*unstructured.Unstructured
	for _, o := range objects {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		err := l.client.Get(ctx, client.ObjectKey{Namespace: cmp.Or(o.GetNamespace(), defaultNamespace), Name: o.GetName()}, got)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, err
		}
		live = append(live, got)
	}
	return live, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
