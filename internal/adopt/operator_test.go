package adopt

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func olmObj(kind, name string, obj map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("operators.coreos.com/v1alpha1")
	u.SetKind(kind)
	u.SetNamespace("operators")
	u.SetName(name)
	return u
}

func TestOperatorOf(t *testing.T) {
	sub := olmObj("Subscription", "memcached", map[string]any{
		"spec":   map[string]any{"name": "memcached-operator", "channel": "alpha", "source": "operatorhubio"},
		"status": map[string]any{"installedCSV": "memcached-operator.v0.2.0", "installPlanRef": map[string]any{"name": "install-abc"}},
	})
	csv := olmObj("ClusterServiceVersion", "memcached-operator.v0.2.0", map[string]any{
		"spec":   map[string]any{"version": "0.2.0"},
		"status": map[string]any{"phase": "Succeeded"},
	})
	csv.SetAnnotations(map[string]string{"olm.targetNamespaces": "a,b"})
	op, err := OperatorOf(sub, csv)
	if err != nil {
		t.Fatal(err)
	}
	if op.Package != "memcached-operator" || op.Channel != "alpha" || op.CSV != "memcached-operator.v0.2.0" || op.Version != "0.2.0" ||
		op.Phase != CSVSucceeded || strings.Join(op.InstallPlans, ",") != "install-abc" || strings.Join(op.WatchNamespaces, ",") != "a,b" {
		t.Errorf("operator %+v", op)
	}
	self := Installation{Extension: "memcached-operator", Version: "0.2.0", TargetNamespace: "operators"}
	if err := CheckOperator(op, self); err != nil {
		t.Errorf("CheckOperator: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Operator, *Installation)
		want   string
	}{
		{"not succeeded", func(o *Operator, _ *Installation) { o.Phase, o.Reason = "Failed", "InstallCheckFailed" },
			`is in phase "Failed" (InstallCheckFailed: ), not Succeeded: only a running operator is adopted`},
		{"another package", func(_ *Operator, i *Installation) { i.Extension = "other" },
			"is of package memcached-operator, but spec.extension is other: set spec.extension to memcached-operator"},
		{"another version", func(_ *Operator, i *Installation) { i.Version = "0.3.0" },
			"is version 0.2.0, but the installation resolved 0.3.0: set spec.version to 0.2.0"},
		{"another namespace", func(_ *Operator, i *Installation) { i.TargetNamespace = "elsewhere" },
			"set spec.targetNamespace to operators"},
	} {
		o, i := *op, self
		tc.change(&o, &i)
		if err := CheckOperator(&o, i); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}

	unstructured.RemoveNestedField(sub.Object, "status")
	if _, err := OperatorOf(sub, nil); err == nil || !strings.Contains(err.Error(), "has installed nothing yet") {
		t.Errorf("a Subscription without an installed CSV: %v", err)
	}
}

func TestOrphanPatch(t *testing.T) {
	deploy := &unstructured.Unstructured{Object: map[string]any{}}
	deploy.SetResourceVersion("42")
	deploy.SetOwnerReferences([]metav1.OwnerReference{
		{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion", Name: "op.v1", UID: "u1"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "keep", UID: "u2"},
	})
	deploy.SetLabels(map[string]string{"olm.owner": "op.v1", "olm.owner.kind": "ClusterServiceVersion", "olm.owner.namespace": "operators", "app": "op"})
	patch, ok, err := OrphanPatch(deploy, "op.v1", "operators")
	if err != nil || !ok {
		t.Fatalf("ok %v err %v", ok, err)
	}
	want := `{"metadata":{"labels":{"olm.owner":null,"olm.owner.kind":null,"olm.owner.namespace":null},"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"keep","uid":"u2"}],"resourceVersion":"42"}}`
	if string(patch) != want {
		t.Errorf("patch\n%s\nwant\n%s", patch, want)
	}

	// Only the CSV adopted: another CSV's labels and references stay.
	other := deploy.DeepCopy()
	if _, ok, _ := OrphanPatch(other, "op.v2", "operators"); ok {
		t.Errorf("an object of another CSV would be changed")
	}
	only := &unstructured.Unstructured{Object: map[string]any{}}
	only.SetOwnerReferences(deploy.GetOwnerReferences()[:1])
	patch, ok, _ = OrphanPatch(only, "op.v1", "operators")
	if !ok || string(patch) != `{"metadata":{"ownerReferences":null,"resourceVersion":""}}` {
		t.Errorf("the only reference: %s", patch)
	}
}
