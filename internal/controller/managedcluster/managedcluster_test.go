package managedcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	"github.com/annex-platform/annex/internal/localcluster"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/testenv/withmanager"
)

// env is the hub: a real API server with the whole manager running.
var env *testenv.Env

func TestMain(m *testing.M) { withmanager.Main(m, &env) }

// edge is a second real API server, registered as a ManagedCluster named
// name through a kubeconfig Secret in namespace ns.
type edge struct {
	*testenv.Env
	kubeconfig []byte
}

func startEdge(t *testing.T) *edge {
	e := testenv.Start(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := e.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &edge{Env: e, kubeconfig: data}
}

// setup is setupHub, and the same namespace on the edge, where the
// installations put their objects.
func setup(t *testing.T, e *edge) string {
	t.Helper()
	ns := setupHub(t, e)
	if err := e.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// setupHub creates a namespace on the hub, a catalog with one chart, and
// the edge's kubeconfig Secret.
func setupHub(t *testing.T, e *edge) string {
	t.Helper()
	ctx := context.Background()
	ns := strings.ToLower(t.Name())
	repo := helmrepo.NewServer(t, helmrepo.Chart{Name: ns + "-app", Version: "1.0.0", Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {a: b}\n",
	}})
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}, Data: map[string][]byte{"kubeconfig": e.kubeconfig}},
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

func createCluster(t *testing.T, name, ns string, policy v1alpha1.DeletionPolicy) *v1alpha1.ManagedCluster {
	t.Helper()
	mc := &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ManagedClusterSpec{
		KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: ns, Name: "edge", Key: "kubeconfig"},
		DeletionPolicy:      policy,
	}}
	if err := env.Client.Create(context.Background(), mc); err != nil {
		t.Fatal(err)
	}
	return mc
}

func installOn(t *testing.T, ns, name, cluster string) *v1alpha1.ExtensionInstallation {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: ns + "-app", Cluster: cluster},
	}
	if err := env.Client.Create(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(inst), inst); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("%s not Ready: %+v", name, inst.Status.Conditions)
		}
		return nil
	})
	return inst
}

// awaitCluster waits until the ManagedCluster's status passes check.
func awaitCluster(t *testing.T, name string, check func(*v1alpha1.ManagedCluster) error) *v1alpha1.ManagedCluster {
	t.Helper()
	mc := &v1alpha1.ManagedCluster{}
	eventually(t, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, mc); err != nil {
			return err
		}
		return check(mc)
	})
	return mc
}

func reachable(want metav1.ConditionStatus) func(*v1alpha1.ManagedCluster) error {
	return func(mc *v1alpha1.ManagedCluster) error {
		c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReachable)
		if c == nil || c.Status != want {
			return fmt.Errorf("Reachable is %+v, want %s", c, want)
		}
		return nil
	}
}

// A cluster's status tells its version, nodes and installations; a broken
// kubeconfig makes it unreachable with a message naming the Secret, its
// installation keeps what it installed, and both recover when the Secret
// is mended.
func TestStatusAndRecovery(t *testing.T) {
	ctx := context.Background()
	e := startEdge(t)
	ns := setup(t, e)
	name := ns + "-edge"
	createCluster(t, name, ns, "")
	version, err := testenv.KubeVersion()
	if err != nil {
		t.Fatal(err)
	}
	mc := awaitCluster(t, name, reachable(metav1.ConditionTrue))
	if mc.Status.KubernetesVersion != "v"+version || !strings.Contains(meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReachable).Message, "0 nodes") {
		t.Fatalf("status %+v: want Kubernetes v%s and 0 nodes", mc.Status, version)
	}
	if !slices.Contains(mc.Finalizers, v1alpha1.FinalizerClusterInstallations) {
		t.Fatalf("finalizers %v: the cluster must be held until its installations are gone", mc.Finalizers)
	}
	inst := installOn(t, ns, "app", name)
	awaitCluster(t, name, func(mc *v1alpha1.ManagedCluster) error {
		if mc.Status.Installations != 1 || mc.Status.ReadyInstallations != 1 {
			return fmt.Errorf("installations %d, ready %d; want 1 and 1", mc.Status.Installations, mc.Status.ReadyInstallations)
		}
		return nil
	})

	// A declared upgrade target is checked as annexctl preflight does.
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Spec.UpgradeTarget = "1.40.0"
	if err := env.Client.Patch(ctx, mc, patch); err != nil {
		t.Fatal(err)
	}
	awaitCluster(t, name, func(mc *v1alpha1.ManagedCluster) error {
		c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionUpgradeReady)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "Kubernetes 1.40.0") {
			return fmt.Errorf("UpgradeReady %+v", c)
		}
		return nil
	})

	// The Secret now points at a port where nothing listens.
	broken := strings.Replace(string(e.kubeconfig), "server: https://127.0.0.1:", "server: https://127.0.0.1:1#", 1)
	sec := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "edge"}, sec); err != nil {
		t.Fatal(err)
	}
	sec.Data["kubeconfig"] = []byte(broken)
	if err := env.Client.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	mc = awaitCluster(t, name, reachable(metav1.ConditionFalse))
	msg := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionReachable).Message
	if !strings.Contains(msg, "Secret "+ns+"/edge") || !strings.Contains(msg, "kubeconfig") {
		t.Fatalf("the Reachable message must name the Secret and what to check: %s", msg)
	}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the installed ConfigMap must stay while the cluster is unreachable: %v", err)
	}

	// Mended: reachable again, the installation still there and Ready.
	sec.Data["kubeconfig"] = e.kubeconfig
	if err := env.Client.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	awaitCluster(t, name, reachable(metav1.ConditionTrue))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(inst), inst); err != nil || !inst.DeletionTimestamp.IsZero() {
		t.Fatalf("the installation must survive the outage (err=%v)", err)
	}
}

// Deleting a ManagedCluster uninstalls its installations first; with
// deletionPolicy Orphan it releases them and leaves the cluster alone.
func TestDeletion(t *testing.T) {
	ctx := context.Background()
	e := startEdge(t)
	ns := setup(t, e)
	for _, tc := range []struct {
		policy    v1alpha1.DeletionPolicy
		keepsObjs bool
	}{
		{v1alpha1.DeletionPolicyUninstall, false},
		{v1alpha1.DeletionPolicyOrphan, true},
	} {
		name := ns + "-" + strings.ToLower(string(tc.policy))
		mc := createCluster(t, name, ns, tc.policy)
		awaitCluster(t, name, reachable(metav1.ConditionTrue))
		app := strings.ToLower(string(tc.policy))
		installOn(t, ns, app, name)
		if err := env.Client.Delete(ctx, mc); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &v1alpha1.ManagedCluster{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("ManagedCluster %s still there (err=%v)", name, err)
			}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, &v1alpha1.ExtensionInstallation{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("installation %s still there (err=%v)", app, err)
			}
			return nil
		})
		err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, &corev1.ConfigMap{})
		if tc.keepsObjs != (err == nil) {
			t.Fatalf("deletionPolicy %s: the installed ConfigMap exists: %v (err=%v)", tc.policy, err == nil, err)
		}
	}
}

func eventually(t *testing.T, f func() error) {
	t.Helper()
	testenv.Eventually(t, 90*time.Second, f)
}

// An installation into a ManagedCluster whose target namespace does not
// exist there creates it, and its uninstall removes it: the edge cluster
// here runs kube-controller-manager, which finalizes the namespace.
func TestTargetNamespaceCreatedOnCluster(t *testing.T) {
	ctx := context.Background()
	lc, err := localcluster.Start(ctx, localcluster.Options{
		Dir: t.TempDir(), BinDir: testenv.RequireWorkloadsBinDir(t), Workloads: true, Nodes: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lc.Stop() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := lc.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	remote, err := client.New(lc.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &edge{kubeconfig: data}
	ns := setupHub(t, e)
	name := ns + "-edge"
	createCluster(t, name, ns, "")
	awaitCluster(t, name, reachable(metav1.ConditionTrue))
	inst := installOn(t, ns, "app", name)

	got := &corev1.Namespace{}
	if err := remote.Get(ctx, client.ObjectKey{Name: ns}, got); err != nil || got.Labels[v1alpha1.LabelInstallationName] != "app" {
		t.Fatalf("namespace %s on the managed cluster: labels %v (err=%v); want it created by the installation", ns, got.Labels, err)
	}
	if err := env.Client.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(inst), inst); !apierrors.IsNotFound(err) {
			return fmt.Errorf("installation still there (err=%v)", err)
		}
		if err := remote.Get(ctx, client.ObjectKey{Name: ns}, got); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s still on the managed cluster (err=%v)", ns, err)
		}
		return nil
	})
}

// Charts render against the cluster they land on: the same chart sees a
// kind the managed cluster serves and the hub does not.
func TestRenderSeesTheTargetClustersAPIs(t *testing.T) {
	ctx := context.Background()
	e := startEdge(t)
	ns := strings.ToLower(t.Name())
	group := ns + ".annex.dev"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", Plural: "gadgets", ListKind: "GadgetList", Singular: "gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	}
	if err := e.Client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	repo := helmrepo.NewServer(t, helmrepo.Chart{Name: ns + "-caps", Version: "1.0.0", Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  gadget: {{ .Capabilities.APIVersions.Has \"" + group + "/v1/Gadget\" | quote }}\n",
	}})
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}, Data: map[string][]byte{"kubeconfig": e.kubeconfig}},
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	name := ns + "-edge"
	createCluster(t, name, ns, "")
	for _, target := range []struct {
		inst, cluster string
		c             client.Client
		want          string
	}{{"on-edge", name, e.Client, "true"}, {"on-hub", "", env.Client, "false"}} {
		inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: target.inst},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: ns + "-caps", Cluster: target.cluster}}
		if err := env.Client.Create(ctx, inst); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			cm := &corev1.ConfigMap{}
			if err := target.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: target.inst}, cm); err != nil {
				return err
			}
			if cm.Data["gadget"] != target.want {
				return fmt.Errorf("%s: gadget %q, want %q", target.inst, cm.Data["gadget"], target.want)
			}
			return nil
		})
	}
}

// A ManagedCluster whose maintenance windows cannot be read says so in
// the condition MaintenanceWindows, naming every bad field, and stays
// Ready (it works; only rollouts wait for it); once the windows are
// fixed the condition goes.
func TestInvalidMaintenanceWindows(t *testing.T) {
	ctx := context.Background()
	e := startEdge(t)
	ns := setupHub(t, e)
	name := ns + "-edge"
	createCluster(t, name, ns, "")
	mc := awaitCluster(t, name, reachable(metav1.ConditionTrue))
	if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionMaintenanceWindows); c != nil {
		t.Fatalf("a cluster without windows has the condition %+v", c)
	}

	// The API server takes these (its schema checks lengths only); Annex
	// cannot read them.
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{
		{Schedule: "0 2 * * 6", Duration: metav1.Duration{Duration: 2 * time.Hour}, TimeZone: "Europe/Berlin"},
		{Schedule: "0 0 2 * * 6", Duration: metav1.Duration{Duration: time.Hour}},
		{Schedule: "30 1 * * *", Duration: metav1.Duration{Duration: 30 * time.Second}, TimeZone: "Mars/Olympus"},
	}
	if err := env.Client.Patch(ctx, mc, patch); err != nil {
		t.Fatal(err)
	}
	mc = awaitCluster(t, name, func(mc *v1alpha1.ManagedCluster) error {
		c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionMaintenanceWindows)
		if c == nil || c.ObservedGeneration != mc.Generation {
			return fmt.Errorf("no MaintenanceWindows condition for generation %d: %+v", mc.Generation, mc.Status.Conditions)
		}
		return nil
	})
	c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionMaintenanceWindows)
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonInvalidMaintenanceWindow {
		t.Fatalf("MaintenanceWindows %+v, want False %s", c, v1alpha1.ReasonInvalidMaintenanceWindow)
	}
	for _, want := range []string{
		`spec.maintenanceWindows[1].schedule "0 0 2 * * 6": expected exactly 5 fields`,
		`spec.maintenanceWindows[2].timeZone "Mars/Olympus"`,
		`spec.maintenanceWindows[2].duration 30s`,
		"rollouts of profiles do not change the cluster",
	} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("MaintenanceWindows message %q does not say %q", c.Message, want)
		}
	}
	if strings.Contains(c.Message, "maintenanceWindows[0]") {
		t.Errorf("MaintenanceWindows message %q names the valid window 0", c.Message)
	}
	if !meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReady) {
		t.Errorf("invalid windows made the cluster not Ready: %+v", mc.Status.Conditions)
	}

	// Fixed: the condition goes.
	patch = client.MergeFrom(mc.DeepCopy())
	mc.Spec.MaintenanceWindows = mc.Spec.MaintenanceWindows[:1]
	if err := env.Client.Patch(ctx, mc, patch); err != nil {
		t.Fatal(err)
	}
	awaitCluster(t, name, func(mc *v1alpha1.ManagedCluster) error {
		if mc.Status.ObservedGeneration != mc.Generation {
			return fmt.Errorf("observed generation %d of %d", mc.Status.ObservedGeneration, mc.Generation)
		}
		if c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionMaintenanceWindows); c != nil {
			return fmt.Errorf("valid windows, and still %+v", c)
		}
		return nil
	})
}
