package cli_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// fixtureTime is the time every condition and event of the fixture
// carries.
var fixtureTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fleet writes a small fleet into the API server: two catalogs, three
// extensions, two managed clusters and installations in every state
// status distinguishes, with their status written through the status
// subresource as Annex would. It returns the latest creation time, so
// that tables print stable ages.
func fleet(t *testing.T, c client.Client) time.Time {
	t.Helper()
	ctx := context.Background()
	var latest time.Time
	create := func(obj client.Object) {
		t.Helper()
		status := obj.DeepCopyObject().(client.Object)
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
		if ct := obj.GetCreationTimestamp().Time; ct.After(latest) {
			latest = ct
		}
		status.SetResourceVersion(obj.GetResourceVersion())
		status.SetUID(obj.GetUID())
		status.SetGeneration(obj.GetGeneration())
		setGeneration(status, obj.GetGeneration())
		if err := c.Status().Update(ctx, status); err != nil {
			t.Fatalf("status of %T %s: %v", obj, obj.GetName(), err)
		}
	}
	for _, ns := range []string{"platform", "team-a", "team-b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	create(&v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: "builtin"},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Builtin: &v1alpha1.BuiltinSource{}}, Priority: 10},
		Status: v1alpha1.CatalogStatus{ExtensionCount: 2, Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "2 extensions")}},
	})
	create(&v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: "charts"},
		Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: "https://charts.example.com"}},
			Interval: metav1.Duration{Duration: time.Hour}},
		Status: v1alpha1.CatalogStatus{ExtensionCount: 1, Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonFetchFailed,
				"spec.source.helm.url: GET https://charts.example.com/index.yaml: 503 Service Unavailable; the Extensions of the last good sync stay available")}},
	})

	schema := `{"type":"object","required":["image"],"properties":{
		"replicaCount":{"type":"integer","default":1,"description":"Pods to run"},
		"image":{"type":"object","properties":{"tag":{"type":"string","description":"image tag"},"repository":{"type":"string","default":"ghcr.io/stefanprodan/podinfo"}}},
		"ingress":{"type":"object","properties":{"enabled":{"type":["boolean","null"],"default":false},
			"tls":{"type":"object","properties":{"secretName":{"type":"string"}}}}}}}`
	create(&v1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "cert-manager", Labels: map[string]string{v1alpha1.LabelCatalog: "builtin"}},
		Spec: v1alpha1.ExtensionSpec{DisplayName: "cert-manager", Description: "X.509 certificates for Kubernetes: issues and renews TLS certificates",
			Keywords: []string{"tls", "certificates"}, Home: "https://cert-manager.io",
			Versions: []v1alpha1.ExtensionVersion{
				{Version: "1.15.0", AppVersion: "v1.15.0", KubeVersion: ">=1.29.0-0", Source: v1alpha1.ArtifactSource{Catalog: "builtin", URL: "builtin://cert-manager-1.15.0.tgz"}},
				{Version: "1.14.2", AppVersion: "v1.14.2", KubeVersion: ">=1.25.0-0 <1.33.0-0", Deprecated: true, Source: v1alpha1.ArtifactSource{Catalog: "builtin", URL: "builtin://cert-manager-1.14.2.tgz"}},
			}},
	})
	create(&v1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Labels: map[string]string{v1alpha1.LabelCatalog: "charts"}},
		Spec: v1alpha1.ExtensionSpec{DisplayName: "Podinfo", Description: "A tiny web application that serves TLS through cert-manager\nIt also serves metrics.",
			Keywords: []string{"demo", "web"},
			Versions: []v1alpha1.ExtensionVersion{
				{Version: "6.5.0", AppVersion: "6.5.0", Dependencies: []v1alpha1.Dependency{{Name: "cert-manager", Version: "^1.14"}},
					ValuesSchema: &apiextensionsv1.JSON{Raw: []byte(schema)},
					Source:       v1alpha1.ArtifactSource{Catalog: "charts", URL: "https://charts.example.com/podinfo-6.5.0.tgz"}},
				{Version: "6.4.0", AppVersion: "6.4.0", Dependencies: []v1alpha1.Dependency{{Name: "cert-manager", Version: "^1.14"}},
					Source: v1alpha1.ArtifactSource{Catalog: "charts", URL: "https://charts.example.com/podinfo-6.4.0.tgz"}},
			}},
	})
	create(&v1alpha1.Extension{
		ObjectMeta: metav1.ObjectMeta{Name: "mysql", Labels: map[string]string{v1alpha1.LabelCatalog: "builtin"}},
		Spec: v1alpha1.ExtensionSpec{Description: "MySQL operated by an Annex package with backup and restore plans", Keywords: []string{"database"},
			Versions: []v1alpha1.ExtensionVersion{{Version: "0.2.0", Engine: v1alpha1.EnginePackage,
				Source: v1alpha1.ArtifactSource{Catalog: "builtin", URL: "builtin://mysql-0.2.0.tgz"}}}},
	})

	kubeconfig := v1alpha1.KubeconfigSecretReference{Name: "kubeconfig", Namespace: "platform"}
	create(&v1alpha1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-eu", Labels: map[string]string{"env": "prod", v1alpha1.LabelShard: "eu"}},
		Spec:       v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: kubeconfig},
		Status: v1alpha1.ManagedClusterStatus{KubernetesVersion: "1.35.0", Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionReachable, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1.35.0")}},
	})
	create(&v1alpha1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "prod-us", Labels: map[string]string{"env": "prod"}},
		Spec:       v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: kubeconfig},
		Status: v1alpha1.ManagedClusterStatus{Conditions: []metav1.Condition{
			cond(v1alpha1.ConditionReachable, metav1.ConditionFalse, v1alpha1.ReasonClusterUnavailable, "dial tcp 10.0.0.9:6443: connection refused")}},
	})

	ready := func(ext, version string) v1alpha1.ExtensionInstallationStatus {
		return v1alpha1.ExtensionInstallationStatus{ResolvedVersion: version, InstalledVersion: version, ClusterVersion: "1.36.4",
			Conditions: []metav1.Condition{cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, ext+" "+version+" is installed and healthy (12 objects)")}}
	}
	inst := func(ns, name, ext, cluster string, status v1alpha1.ExtensionInstallationStatus) *v1alpha1.ExtensionInstallation {
		return &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.ExtensionInstallationSpec{Extension: ext, Cluster: cluster},
			Status:     status,
		}
	}
	// The hub: cert-manager and podinfo, both healthy.
	cm := ready("cert-manager", "1.15.0")
	cm.RequiredBy = []string{"team-a/podinfo"}
	create(inst("platform", "cert-manager", "cert-manager", "", cm))
	create(inst("team-a", "podinfo", "podinfo", "", ready("podinfo", "6.5.0")))

	// prod-eu: cert-manager stalled on its values, podinfo waits for it,
	// mysql runs its deploy plan.
	stalled := v1alpha1.ExtensionInstallationStatus{ResolvedVersion: "1.15.0", Conditions: []metav1.Condition{
		cond(v1alpha1.ConditionResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "1.15.0"),
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonValuesInvalid, "values.replicaCount: must be >= 0 (got -1); see extension \"cert-manager\" 1.15.0 values schema"),
		cond(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonValuesInvalid, "values.replicaCount: must be >= 0 (got -1); see extension \"cert-manager\" 1.15.0 values schema"),
	}}
	create(inst("platform", "cert-manager-eu", "cert-manager", "prod-eu", stalled))
	waiting := v1alpha1.ExtensionInstallationStatus{ResolvedVersion: "6.5.0", Conditions: []metav1.Condition{
		cond(v1alpha1.ConditionResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "6.5.0"),
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDependencyNotReady, "cert-manager ^1.14: platform/cert-manager-eu is not Ready"),
	}}
	create(inst("team-a", "web", "podinfo", "prod-eu", waiting))
	running := v1alpha1.ExtensionInstallationStatus{ResolvedVersion: "0.2.0", Conditions: []metav1.Condition{
		cond(v1alpha1.ConditionResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "0.2.0"),
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPlanRunning, "plan deploy: step app waits for Deployment team-b/mysql"),
	}, Plans: []v1alpha1.PlanStatus{{Name: "deploy", State: v1alpha1.PlanInProgress, Trigger: "install", Revision: 1, Phases: []v1alpha1.PhaseStatus{
		{Name: "main", State: v1alpha1.PlanInProgress, Steps: []v1alpha1.StepStatus{
			{Name: "config", State: v1alpha1.PlanComplete},
			{Name: "app", State: v1alpha1.PlanInProgress, Message: "waiting for Deployment team-b/mysql: 0/1 replicas available"},
			{Name: "service", State: v1alpha1.PlanPending}}}}},
		{Name: "backup", State: v1alpha1.PlanNeverRun}}}
	create(inst("team-b", "db", "mysql", "prod-eu", running))

	// prod-us: podinfo waits for an approval.
	approval := v1alpha1.ExtensionInstallationStatus{ResolvedVersion: "6.5.0", Conditions: []metav1.Condition{
		cond(v1alpha1.ConditionResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "6.5.0"),
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonApprovalRequired, "install 6.5.0 needs an Approval of sha256:abab… (policy majors)"),
	}}
	create(inst("team-a", "podinfo-us", "podinfo", "prod-us", approval))

	for i, e := range []struct{ name, typ, reason, note string }{
		{"podinfo", "Normal", "Installed", "podinfo 6.5.0 installed (12 objects)"},
		{"web", "Warning", "DependencyNotReady", "cert-manager ^1.14: platform/cert-manager-eu is not Ready"},
		{"podinfo", "Normal", "Upgraded", "podinfo 6.4.0 → 6.5.0"},
	} {
		ev := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: e.name + "." + string(rune('a'+i))},
			EventTime:  metav1.NewMicroTime(fixtureTime.Add(time.Duration(i) * time.Minute)),
			Regarding:  corev1.ObjectReference{Kind: "ExtensionInstallation", APIVersion: v1alpha1.GroupVersion.String(), Namespace: "team-a", Name: e.name},
			Type:       e.typ, Reason: e.reason, Note: e.note, Action: e.reason,
			ReportingController: "annex.dev/manager", ReportingInstance: "annex-0",
		}
		if err := c.Create(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	// An event about another kind, which events leaves out.
	other := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "pod.x"},
		EventTime:  metav1.NewMicroTime(fixtureTime),
		Regarding:  corev1.ObjectReference{Kind: "Pod", Namespace: "team-a", Name: "x"},
		Type:       "Normal", Reason: "Scheduled", Note: "scheduled", Action: "Binding",
		ReportingController: "default-scheduler", ReportingInstance: "s",
	}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	return latest
}

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(fixtureTime)}
}

// setGeneration makes the conditions of a status describe generation g.
func setGeneration(obj client.Object, g int64) {
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *v1alpha1.ExtensionInstallation:
		conds = o.Status.Conditions
	case *v1alpha1.Catalog:
		conds = o.Status.Conditions
	case *v1alpha1.ManagedCluster:
		conds = o.Status.Conditions
	}
	for i := range conds {
		conds[i].ObservedGeneration = g
	}
}
