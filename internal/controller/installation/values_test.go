package installation_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// messageOf reads the message a podinfoChart installation rendered.
func messageOf(t *testing.T, ns, inst string) string {
	t.Helper()
	cm, err := get(t, configMapGVK, ns, inst+"-config")
	if err != nil {
		return ""
	}
	msg, _, _ := unstructured.NestedString(cm.Object, "data", "message")
	return msg
}

// A changed Secret re-renders the installations whose values come from it
// within seconds — it is watched, not polled — and only those.
func TestValuesSourceChangeRerendersItsUsers(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("watched", "1.0.0", nil), podinfoChart("bystander", "1.0.0", nil))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values"}, StringData: map[string]string{"values.yaml": "message: one\n"}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	user := install(t, ns, "user", "watched", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Name: "values"}}
	})
	other := install(t, ns, "other", "bystander", "")
	waitCondition(t, user, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	waitCondition(t, other, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if got := messageOf(t, ns, "user"); got != "one" {
		t.Fatalf("message %q, want the Secret's one", got)
	}

	secret.StringData = map[string]string{"values.yaml": "message: two\n"}
	if err := env.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	// Far below the 10-minute resync: only the watch can explain it.
	eventually(t, 20*time.Second, func() error {
		if got := messageOf(t, ns, "user"); got != "two" {
			return fmt.Errorf("message %q, want two", got)
		}
		return nil
	})
	got := &v1alpha1.ExtensionInstallation{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.History) != 1 {
		t.Fatalf("the installation that does not use the Secret was applied again: %d revisions", len(got.Status.History))
	}
}

// Values from another namespace are refused until a hub admin lets that
// namespace share them, and taken as soon as it does.
func TestValuesFromAnotherNamespaceNeedAGrant(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("shared", "1.0.0", nil))
	source := ns + "-source"
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: source}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: source, Name: "team-values"}, StringData: map[string]string{"values.yaml": "message: from-the-platform\n"}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	inst := install(t, ns, "web", "shared", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":0}`)}
		i.Spec.ValuesFrom = []v1alpha1.ValuesReference{{Kind: "Secret", Namespace: source, Name: "team-values"}}
	})
	got := &v1alpha1.ExtensionInstallation{}
	eventually(t, 30*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(inst), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Reason != v1alpha1.ReasonValuesNotShared || !strings.Contains(c.Message, "annex.dev/share-values-with") {
			return fmt.Errorf("conditions: %s", describeConditions(got))
		}
		return nil
	})
	if _, err := get(t, configMapGVK, ns, "web-config"); err == nil {
		t.Fatal("nothing may be applied before the grant")
	}

	nsObj := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: source}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Annotations = map[string]string{v1alpha1.AnnotationShareValuesWith: "someone-else, " + ns}
	if err := env.Client.Update(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if msg := messageOf(t, ns, "web"); msg != "from-the-platform" {
		t.Fatalf("message %q, want the shared Secret's value", msg)
	}
}
