package installation_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// bigCRDChart is an operator-sized chart: crds/ holds 16 CRDs of about
// 250 KiB each, whose descriptions are random words (so the render stays
// over 2 MiB after gzip, as few real ones do), and templates/ a ConfigMap.
// Version 2.0.0 adds a ConfigMap the API server refuses, so an upgrade to
// it fails and rolls back.
func bigCRDChart(name, version string) helmrepo.Chart {
	files := map[string]string{
		"values.yaml":       "setting: one\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  setting: {{ .Values.setting | quote }}\n",
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 16 {
		var words strings.Builder
		for words.Len() < 250<<10 {
			fmt.Fprintf(&words, "%x ", rng.Uint32())
		}
		files[fmt.Sprintf("crds/crd-%02d.yaml", i)] = fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things%[1]d.%[2]s.annex.dev
spec:
  group: %[2]s.annex.dev
  names: {kind: Thing%[1]d, plural: things%[1]d, singular: thing%[1]d, listKind: Thing%[1]dList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: %[3]q
`, i, name, words.String())
	}
	if version == "2.0.0" {
		files["templates/bad.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-BAD\n"
	}
	return helmrepo.Chart{Name: name, Version: version, Files: files}
}

// recordStorage lists the record and piece Secrets of a namespace and the
// bytes of data they hold.
func recordStorage(t *testing.T, ns string) (records, pieces []corev1.Secret, bytes int) {
	t.Helper()
	var list corev1.SecretList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		switch s.Type {
		case v1alpha1.RevisionSecretType:
			records = append(records, s)
		case v1alpha1.RecordPieceSecretType:
			pieces = append(pieces, s)
		default:
			continue
		}
		for _, v := range s.Data {
			bytes += len(v)
		}
	}
	return records, pieces, bytes
}

// A chart whose gzip'd render is over 2 MiB — more than one Secret holds —
// installs, upgrades, rolls back from its record and uninstalls; its
// revisions share the pieces of the CRDs they have in common, and nothing
// is left behind.
func TestRecordLargerThanASecret(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, bigCRDChart("bigcrds", "1.0.0"), bigCRDChart("bigcrds", "2.0.0"))
	inst := install(t, ns, "big", "bigcrds", "1.x", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Upgrade.Retries = ptrTo(int32(0))
	})
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	records, pieces, stored := recordStorage(t, ns)
	if len(records) != 1 || len(pieces) < 3 || stored < 2<<20 {
		t.Fatalf("after install: %d records, %d pieces, %d bytes; want 1 record and over 2 MiB in at least 3 pieces", len(records), len(pieces), stored)
	}
	for _, p := range pieces {
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != got.UID {
			t.Fatalf("piece %s is owned by %+v, want the installation", p.Name, p.OwnerReferences)
		}
	}
	t.Logf("revision 1: %d bytes in %d record and %d pieces", stored, len(records), len(pieces))

	// A new value: revision 2 stores its ConfigMap again, not the CRDs.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"setting":"two"}`)}
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		got = &v1alpha1.ExtensionInstallation{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(inst), got); err != nil {
			return err
		}
		if len(got.Status.History) < 2 || !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("revision 2 not Ready yet: %s", describeConditions(got))
		}
		return nil
	})
	records2, pieces2, stored2 := recordStorage(t, ns)
	if len(records2) != 2 || len(pieces2) > len(pieces)+1 || stored2 > stored+64<<10 {
		t.Fatalf("after a value change: %d records, %d pieces (was %d), %d bytes (was %d); the CRDs' pieces must be shared",
			len(records2), len(pieces2), len(pieces), stored2, stored)
	}
	t.Logf("revisions 1-2: %d bytes in %d records and %d pieces", stored2, len(records2), len(pieces2))

	// 2.0.0 is refused by the API server: the upgrade is rolled back from
	// the record of revision 2, which is in pieces.
	patch = client.MergeFrom(got.DeepCopy())
	got.Spec.Version = "2.x"
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonRolledBack)
	if got.Status.InstalledVersion != "1.0.0" {
		t.Fatalf("installed %s after the rollback, want 1.0.0", got.Status.InstalledVersion)
	}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "big-settings"}, cm); err != nil || cm.Data["setting"] != "two" {
		t.Fatalf("the rollback must restore revision 2's ConfigMap: %v %v", cm.Data, err)
	}

	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "big")
	records, pieces, _ = recordStorage(t, ns)
	if len(records)+len(pieces) != 0 {
		t.Fatalf("after uninstall: %d records and %d pieces left", len(records), len(pieces))
	}
	// CRDs stay unless spec.uninstall.deleteCRDs (deleting 16 CRDs of
	// 250 KiB takes the test API server minutes: each rebuilds its OpenAPI).
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "things0.bigcrds.annex.dev"}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
		t.Fatalf("the CRDs must stay after the uninstall: %v", err)
	}
}
