package console_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/console"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/testenv/withmanager"
)

var env *testenv.Env

func TestMain(m *testing.M) { withmanager.Main(m, &env) }

// readerRole lets a console user read what every page shows, in every
// namespace: the annex.dev kinds (the informers need list and watch),
// events, and the kinds of the test charts' objects (inventory health).
const readerRole = "annex-console-test-reader"

// consoleUser returns a rest.Config that impersonates user, who may read
// what the console shows (readerRole, cluster-wide), ask for an
// extension's values (annex-extension-viewer) and, in each
// namespace of roles, what Annex's shipped ClusterRoles grant:
// "requester" (annex-extension-requester: write installations) or
// "approver" (annex-approver: create Approvals).
func consoleUser(t *testing.T, user string, roles map[string]string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "approval_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		cr := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict([]byte(doc), cr); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, cr); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	reader := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: readerRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps", "serviceaccounts"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	if err := env.Client.Create(ctx, reader); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	bindings := []client.Object{&rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: readerRole + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: readerRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, &rbacv1.ClusterRoleBinding{
		// An extension's page asks the manager for the values of a
		// version it has not read, as annex-extension-viewer may.
		ObjectMeta: metav1.ObjectMeta{Name: "annex-extension-viewer-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "annex-extension-viewer"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}}
	for ns, role := range roles {
		name := map[string]string{"requester": "annex-extension-requester", "approver": "annex-approver"}[role]
		bindings = append(bindings, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		})
	}
	for _, b := range bindings {
		if err := env.Client.Create(ctx, b); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// serveConsole runs a console as cfg's user on 127.0.0.1 until the test
// ends, and returns its URL.
func serveConsole(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := console.New(ctx, cfg, console.Options{Address: "127.0.0.1:0", LiveInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.URL
}

// namespace creates a namespace for the test.
func namespace(t *testing.T, name string) string {
	t.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// catalogOf serves charts from a Helm repository, adds a Catalog of it
// and waits until it has synced.
func catalogOf(t *testing.T, name string, charts ...helmrepo.Chart) {
	t.Helper()
	ctx := context.Background()
	repo := helmrepo.NewServer(t, charts...)
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}},
	}
	if err := env.Client.Create(ctx, cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cat) })
	testenv.Eventually(t, 60*time.Second, func() error {
		got := &v1alpha1.Catalog{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cat), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("catalog %s not ready: %+v", name, got.Status.Conditions)
		}
		return nil
	})
}

// handWrittenExtension serves charts (versions of one extension) from a
// Helm repository that no Catalog reads, and writes their Extension by
// hand, as a platform team may: with each version's values schema,
// which a Helm repository's index does not carry.
func handWrittenExtension(t *testing.T, charts ...helmrepo.Chart) {
	t.Helper()
	repo := helmrepo.NewServer(t, charts...)
	ext := &v1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: charts[0].Name},
		Spec:       v1alpha1.ExtensionSpec{DisplayName: "Console demo", Description: charts[0].Description, Keywords: []string{"demo"}},
	}
	for _, c := range charts {
		data, err := helmrepo.Archive(c)
		if err != nil {
			t.Fatal(err)
		}
		v := v1alpha1.ExtensionVersion{
			Version: c.Version, AppVersion: c.AppVersion, KubeVersion: c.KubeVersion,
			Source: v1alpha1.ArtifactSource{URL: repo.URL() + "/" + c.Name + "-" + c.Version + ".tgz", Digest: catalog.Digest(data)},
		}
		if schema := c.Files["values.schema.json"]; schema != "" {
			v.ValuesSchema = &apiextensionsv1.JSON{Raw: []byte(schema)}
		}
		ext.Spec.Versions = append(ext.Spec.Versions, v)
	}
	create(t, ext)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ext) })
}

// demoChart is a chart whose objects are healthy without controllers (a
// ConfigMap and a ServiceAccount), with a values schema of each input
// kind the install form generates.
func demoChart(name, version, kubeVersion string) helmrepo.Chart {
	return helmrepo.Chart{Name: name, Version: version, AppVersion: version, KubeVersion: kubeVersion,
		Description: "A demo extension for the console's browser tests: a ConfigMap that repeats its values.",
		Files: map[string]string{
			"values.yaml": "message: hello\ncolor: blue\nreplicas: 1\nenabled: true\n",
			"values.schema.json": `{"type":"object","required":["message"],"properties":{
				"message":{"type":"string","minLength":1,"description":"The greeting the ConfigMap holds."},
				"color":{"type":"string","enum":["blue","green"],"description":"A colour."},
				"replicas":{"type":"integer","minimum":0,"description":"How many."},
				"enabled":{"type":"boolean","description":"Whether it is on."}}}`,
			"templates/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}\n",
			"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  message: {{ .Values.message | quote }}
  color: {{ .Values.color | quote }}
  replicas: {{ .Values.replicas | quote }}
  enabled: {{ .Values.enabled | quote }}
  version: {{ .Chart.Version | quote }}
`,
		}}
}

// readyCondition is the installation's Ready condition for its current
// generation, or nil.
func readyCondition(t *testing.T, ns, name string) (*v1alpha1.ExtensionInstallation, *metav1.Condition) {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, inst); err != nil {
		return nil, nil
	}
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	if c == nil || c.ObservedGeneration != inst.Generation {
		return inst, nil
	}
	return inst, c
}
