package catalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/testenv/withmanager"
)

// env is one real kube-apiserver + etcd with the Annex manager running
// against it, shared by the tests of this package. Extensions are
// cluster-scoped, so each test names its charts after itself.
var env *testenv.Env

func TestMain(m *testing.M) { withmanager.Main(m, &env) }

// configChart is a chart of one ConfigMap saying where it came from.
func configChart(name, version, from string) helmrepo.Chart {
	return helmrepo.Chart{Name: name, Version: version, Files: map[string]string{
		"values.yaml":       "from: " + from + "\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  from: {{ .Values.from | quote }}\n  version: {{ .Chart.Version | quote }}\n",
	}}
}

// namespace creates a namespace named after the test.
func namespace(t *testing.T) string {
	t.Helper()
	ns := strings.ToLower(strings.NewReplacer("_", "-", "/", "-").Replace(t.Name()))
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// createCatalog creates a Catalog, deleted when the test ends.
func createCatalog(t *testing.T, name string, src v1alpha1.CatalogSource, mutate ...func(*v1alpha1.Catalog)) *v1alpha1.Catalog {
	t.Helper()
	cat := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.CatalogSpec{Source: src}}
	for _, m := range mutate {
		m(cat)
	}
	if err := env.Client.Create(context.Background(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cat) })
	return cat
}

// waitCatalogReady waits until the catalog is Ready for its generation.
func waitCatalogReady(t *testing.T, name string) *v1alpha1.Catalog {
	t.Helper()
	got := &v1alpha1.Catalog{}
	eventually(t, 60*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionTrue || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("catalog %s not ready: %+v", name, got.Status.Conditions)
		}
		return nil
	})
	return got
}

func getExtension(name string) (*v1alpha1.Extension, error) {
	ext := &v1alpha1.Extension{}
	return ext, env.Client.Get(context.Background(), client.ObjectKey{Name: name}, ext)
}

// install creates an installation and waits for Ready=True.
func installReady(t *testing.T, ns, name, extension string, values string) *v1alpha1.ExtensionInstallation {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: extension, Version: "*"},
	}
	if values != "" {
		inst.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(values)}
	}
	if err := env.Client.Create(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	return waitInstallation(t, inst, metav1.ConditionTrue, "")
}

// waitInstallation waits until Ready has status and its message contains
// want, and returns the installation.
func waitInstallation(t *testing.T, inst *v1alpha1.ExtensionInstallation, status metav1.ConditionStatus, want string) *v1alpha1.ExtensionInstallation {
	t.Helper()
	got := &v1alpha1.ExtensionInstallation{}
	eventually(t, 90*time.Second, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(inst), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != status || !strings.Contains(c.Message, want) {
			return fmt.Errorf("installation %s: want Ready=%s with %q, have %+v", inst.Name, status, want, got.Status.Conditions)
		}
		return nil
	})
	return got
}

// eventually polls f until it returns nil, failing the test with its last
// error after timeout.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// configMapFrom returns the "from" of an installed configChart.
func configMapFrom(t *testing.T, ns, name string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data["from"]
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
