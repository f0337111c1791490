package record

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// Installed reads the installed revision's record once per keeper, and
// again when another revision is installed; nothing is installed before
// the first revision is recorded.
func TestKeeperInstalled(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "default", UID: "0b8ad0d0-0000-4000-8000-000000000001"}}
	k := NewKeeper(env.Client, env.Client, inst)
	if _, found, err := k.Installed(ctx); err != nil || found {
		t.Fatalf("before the first revision: found %v, err %v", found, err)
	}
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace("default")
	cm.SetName("cfg")
	rev := v1alpha1.Revision{Number: 1, Version: "1.0.0"}
	if err := k.WriteIntent(ctx, &rev, Record{Objects: []*unstructured.Unstructured{cm},
		Inventory: []v1alpha1.ObjectReference{{Version: "v1", Kind: "ConfigMap", Namespace: "default", Name: "cfg"}}}); err != nil {
		t.Fatal(err)
	}
	inst.Status.History = []v1alpha1.Revision{rev}
	rec, found, err := k.Installed(ctx)
	if err != nil || !found || len(rec.Objects) != 1 || rec.Objects[0].GetName() != "cfg" {
		t.Fatalf("installed revision 1: %+v, found %v, err %v", rec, found, err)
	}
	// Read once: the record's Secret gone, the keeper still has it.
	if err := env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: NewStore(nil, nil, inst).Name(1)}}); err != nil {
		t.Fatal(err)
	}
	if _, found, err := k.Installed(ctx); err != nil || !found {
		t.Fatalf("read again: found %v, err %v", found, err)
	}
	// Another installed revision is read afresh; revision 2 has no record.
	inst.Status.History = append([]v1alpha1.Revision{{Number: 2, Version: "1.1.0"}}, inst.Status.History...)
	if _, found, err := k.Installed(ctx); err != nil || found {
		t.Fatalf("revision 2 without a record: found %v, err %v", found, err)
	}
}
