// Package tenancy tests a manager in multi-tenant mode: installations act
// as a ServiceAccount of their namespace, and stay in it unless the hub
// admin allows more. The API server authorizes with RBAC, so what a
// ServiceAccount may not do is refused by it, for real.
package tenancy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/testenv/withmanager"
)

var env *testenv.Env

// defaultServiceAccount is what installations that name none act as.
const defaultServiceAccount = "annex-installer"

func TestMain(m *testing.M) {
	withmanager.MainWith(m, &env, func(o *manager.Options) {
		o.DefaultServiceAccount = defaultServiceAccount
		o.RestrictTargets = true
	})
}

// app is namespaced only; operator also brings a ClusterRole.
var (
	app = helmrepo.Chart{Name: "tenant-app", Version: "1.0.0", Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {greeting: hello}\n",
		"templates/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}\n",
	}}
	operator = helmrepo.Chart{Name: "tenant-operator", Version: "1.0.0", Files: map[string]string{
		"templates/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
		"templates/clusterrole.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Release.Name }}-reader\nrules:\n- {apiGroups: [\"\"], resources: [pods], verbs: [get, list]}\n",
	}}
)

// tenant creates a namespace whose installer ServiceAccount may do
// anything there, and nothing cluster-wide.
func tenant(t *testing.T, name string) {
	t.Helper()
	ctx := t.Context()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: defaultServiceAccount}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "installer"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "installer"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "installer"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: name, Name: defaultServiceAccount}},
		},
	} {
		if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func catalog(t *testing.T) {
	t.Helper()
	repo := helmrepo.NewServer(t, app, operator)
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(t.Name())},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}},
	}
	if err := env.Client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cat) })
	testenv.Eventually(t, 30*time.Second, func() error {
		for _, name := range []string{app.Name, operator.Name} {
			if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &v1alpha1.Extension{}); err != nil {
				return err
			}
		}
		return nil
	})
}

func install(t *testing.T, ns, name, extension string, mutate func(*v1alpha1.ExtensionInstallation)) {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: extension},
	}
	if mutate != nil {
		mutate(inst)
	}
	if err := env.Client.Create(t.Context(), inst); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the installation's Ready condition has reason
// (and, when fragment is set, a message containing it).
func waitReady(t *testing.T, ns, name string, status metav1.ConditionStatus, reason, fragment string) *v1alpha1.ExtensionInstallation {
	t.Helper()
	var got *v1alpha1.ExtensionInstallation
	testenv.Eventually(t, 60*time.Second, func() error {
		cur := &v1alpha1.ExtensionInstallation{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, fragment) {
			return fmt.Errorf("%s/%s Ready = %+v, want %s/%s with %q", ns, name, c, status, reason, fragment)
		}
		got = cur
		return nil
	})
	return got
}

func mustGet(t *testing.T, ns, name string) *v1alpha1.ExtensionInstallation {
	t.Helper()
	cur := &v1alpha1.ExtensionInstallation{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cur); err != nil {
		t.Fatal(err)
	}
	return cur
}

func exists(t *testing.T, obj client.Object, ns, name string) bool {
	t.Helper()
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// A tenant's installations do what its ServiceAccount may: the
// namespaced app installs and uninstalls; the operator's ClusterRole is
// refused by the API server, and the condition names the ServiceAccount
// and the permission; a ServiceAccount that does not exist is named too.
func TestInstallationsActAsTheirServiceAccount(t *testing.T) {
	catalog(t)
	tenant(t, "team-a")

	install(t, "team-a", "app", app.Name, nil)
	waitReady(t, "team-a", "app", metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	if !exists(t, &corev1.ConfigMap{}, "team-a", "app") {
		t.Error("the app's ConfigMap was not applied")
	}

	install(t, "team-a", "operator", operator.Name, nil)
	got := waitReady(t, "team-a", "operator", metav1.ConditionFalse, v1alpha1.ReasonPermissionDenied,
		"ServiceAccount team-a/annex-installer may not do what tenant-operator needs")
	msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady).Message
	for _, want := range []string{"the manager's --default-service-account", `resource "clusterroles" in API group "rbac.authorization.k8s.io"`, "at the cluster scope"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q: %s", want, msg)
		}
	}
	if exists(t, &rbacv1.ClusterRole{}, "", "operator-reader") {
		t.Error("a ClusterRole was created through a ServiceAccount that may not create one")
	}

	install(t, "team-a", "other", app.Name, func(i *v1alpha1.ExtensionInstallation) { i.Spec.ServiceAccountName = "nobody" })
	waitReady(t, "team-a", "other", metav1.ConditionFalse, v1alpha1.ReasonPermissionDenied,
		"spec.serviceAccountName: ServiceAccount team-a/nobody does not exist")

	// Uninstall goes through the ServiceAccount too.
	if err := env.Client.Delete(t.Context(), &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "app"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() error {
		if exists(t, &v1alpha1.ExtensionInstallation{}, "team-a", "app") || exists(t, &corev1.ConfigMap{}, "team-a", "app") {
			return fmt.Errorf("app is still installed")
		}
		return nil
	})
}

// A tenant cannot install into another namespace or onto a managed
// cluster unless the hub admin annotates its namespace; even then its
// ServiceAccount's permissions decide.
func TestTargetsNeedTheAdminsGrant(t *testing.T) {
	catalog(t)
	tenant(t, "team-b")
	tenant(t, "shared")

	install(t, "team-b", "elsewhere", app.Name, func(i *v1alpha1.ExtensionInstallation) { i.Spec.TargetNamespace = "shared" })
	waitReady(t, "team-b", "elsewhere", metav1.ConditionFalse, v1alpha1.ReasonTargetNotAllowed,
		"spec.targetNamespace: installations in namespace team-b may not install into targetNamespace \"shared\"")
	if exists(t, &corev1.ConfigMap{}, "shared", "elsewhere") {
		t.Error("applied into a namespace the tenant was not granted")
	}

	install(t, "team-b", "remote", app.Name, func(i *v1alpha1.ExtensionInstallation) { i.Spec.Cluster = "edge-1" })
	waitReady(t, "team-b", "remote", metav1.ConditionFalse, v1alpha1.ReasonTargetNotAllowed,
		"kubectl annotate namespace team-b annex.dev/allow-clusters=edge-1")

	// The admin's grant lets the installation go on; team-b's installer
	// has no rights in namespace shared, and the API server says so.
	ns := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "team-b"}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Annotations = map[string]string{v1alpha1.AnnotationAllowTargetNamespaces: "shared"}
	if err := env.Client.Update(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	// Namespace annotations are not watched for this: nudge the installation.
	testenv.Eventually(t, 10*time.Second, func() error {
		cur := &v1alpha1.ExtensionInstallation{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "team-b", Name: "elsewhere"}, cur); err != nil {
			return err
		}
		cur.Labels = map[string]string{"nudge": "1"}
		return env.Client.Update(t.Context(), cur)
	})
	waitReady(t, "team-b", "elsewhere", metav1.ConditionFalse, v1alpha1.ReasonPermissionDenied,
		`User "system:serviceaccount:team-b:annex-installer" cannot`)
	if c := meta.FindStatusCondition(mustGet(t, "team-b", "elsewhere").Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, `in the namespace "shared"`) {
		t.Errorf("the refusal does not name the namespace: %s", c.Message)
	}
}
