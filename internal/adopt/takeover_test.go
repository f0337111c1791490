package adopt

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// source is what a target cluster answers, as values: Plan is a pure
// decision over them.
type source struct {
	revisions []*Release
	live      []*unstructured.Unstructured
	operator  *Operator
	err       error
}

func (s source) HelmRelease(context.Context, string, string) ([]*Release, string, error) {
	return s.revisions, "secret", s.err
}
func (s source) Live(context.Context, string, []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	return s.live, s.err
}
func (s source) OLMOperator(context.Context, string, string) (*Operator, error) {
	return s.operator, s.err
}

func configMap(ns, name string, labels map[string]string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	o.SetKind("ConfigMap")
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetLabels(labels)
	return o
}

func TestPlan(t *testing.T) {
	self := Installation{Extension: "web", Version: "1.0.0", TargetNamespace: "apps", Name: "web", Namespace: "team"}
	deployed := &Release{Name: "web", Namespace: "apps", Revision: 2, Status: "deployed", Chart: "web", ChartVersion: "1.0.0"}
	helm := &v1alpha1.ExtensionInstallation{Spec: v1alpha1.ExtensionInstallationSpec{Adopt: &v1alpha1.Adoption{Helm: &v1alpha1.HelmReleaseAdoption{Release: "web"}}}}
	olm := &v1alpha1.ExtensionInstallation{Spec: v1alpha1.ExtensionInstallationSpec{Adopt: &v1alpha1.Adoption{OLM: &v1alpha1.OLMOperatorAdoption{Subscription: "web"}}}}
	installed := helm.DeepCopy()
	installed.Status.History = []v1alpha1.Revision{{Number: 1}}
	chart := Rendered{Objects: []*unstructured.Unstructured{configMap("", "web", nil)}}
	for _, tc := range []struct {
		name     string
		inst     *v1alpha1.ExtensionInstallation
		src      source
		rendered Rendered
		// want: the Takeover's managers; refused: a part of the refusal;
		// retry: whether the refusal is retried.
		want    []string
		refused string
		retry   bool
	}{
		// Nothing to adopt once a revision is recorded.
		{name: "installed", inst: installed},
		// A release that matches is taken over by Helm's managers.
		{name: "release", inst: helm, src: source{revisions: []*Release{deployed}}, rendered: chart, want: DefaultHandOver},
		// The cluster not answering is retried.
		{name: "unreachable", inst: helm, src: source{err: errors.New("connection refused")}, refused: "connection refused", retry: true},
		// No release: say where it was looked for.
		{name: "no release", inst: helm, refused: `there is no Helm release "web" in namespace apps`},
		// A package or bundle is not a chart applied in one pass.
		{name: "resumable", inst: helm, src: source{revisions: []*Release{deployed}}, rendered: Rendered{Resumable: true}, refused: "not a Helm chart applied in one pass"},
		// Objects of another installation are not taken from it.
		{name: "foreign", inst: helm, src: source{revisions: []*Release{deployed},
			live: []*unstructured.Unstructured{configMap("apps", "web", map[string]string{
				v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue, v1alpha1.LabelInstallationNamespace: "other", v1alpha1.LabelInstallationName: "web"})}},
			rendered: chart, refused: "has objects of another installation"},
		// No Subscription.
		{name: "no subscription", inst: olm, refused: `there is no Subscription "web"`},
		// An operator is adopted as a bundle only.
		{name: "operator as chart", inst: olm, src: source{operator: &Operator{Subscription: "web", Namespace: "apps", Package: "web", Version: "1.0.0", CSV: "web.v1.0.0", Phase: CSVSucceeded}},
			refused: "is not an operator bundle"},
		// An operator adopted as its bundle, by OLM's managers.
		{name: "operator", inst: olm, src: source{operator: &Operator{Subscription: "web", Namespace: "apps", Package: "web", Version: "1.0.0", CSV: "web.v1.0.0", Phase: CSVSucceeded}},
			rendered: Rendered{Resumable: true}, want: DefaultOLMHandOver},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Plan(context.Background(), tc.src, tc.inst, self, "the hub", tc.rendered)
			var no *Refusal
			switch {
			case tc.refused != "":
				if !errors.As(err, &no) || !strings.Contains(no.Message, tc.refused) || no.Retry != tc.retry {
					t.Fatalf("Plan: got %v (%#v), want a refusal (retry %v) saying %q", err, no, tc.retry, tc.refused)
				}
			case err != nil:
				t.Fatalf("Plan: %v", err)
			case tc.want == nil && got != nil:
				t.Fatalf("Plan: got %+v, want nothing to adopt", got)
			case tc.want != nil && (got == nil || !slices.Equal(got.Managers, tc.want)):
				t.Fatalf("Plan: got %+v, want managers %v", got, tc.want)
			}
		})
	}
}

func TestTakeoverHandOver(t *testing.T) {
	var none *Takeover
	if take, _, _ := none.HandOver(); take || len(none.Objects([]*unstructured.Unstructured{configMap("", "a", nil)})) != 1 {
		t.Fatal("a nil Takeover must take nothing over and keep every object")
	}
	hook := configMap("", "hook", nil)
	hook.SetAnnotations(map[string]string{"helm.sh/hook": "pre-install"})
	rel := &Takeover{Release: &Release{Name: "web", Namespace: "apps", Revision: 3, Chart: "web", ChartVersion: "1.0.0", Hooks: 1}, StorageNamespace: "flux", Managers: DefaultHandOver}
	if take, managers, deferred := rel.HandOver(); !take || !deferred || !slices.Equal(managers, DefaultHandOver) {
		t.Fatalf("release: HandOver() = %v %v %v, want a deferred take-over by %v", take, managers, deferred, DefaultHandOver)
	}
	if got := rel.Objects([]*unstructured.Unstructured{configMap("", "a", nil), hook}); len(got) != 1 || got[0].GetName() != "a" {
		t.Fatalf("release: Objects kept %d objects, want the one that is no hook", len(got))
	}
	from := rel.From(metav1.Time{})
	if from.Kind != KindHelmRelease || from.StorageNamespace != "flux" || from.Revision != 3 {
		t.Fatalf("release: From() = %+v", from)
	}
	if news := rel.News(); !strings.Contains(news, "adopted Helm release apps/web revision 3") || !strings.Contains(news, "its Helm hook was not run again") {
		t.Fatalf("release: News() = %q", news)
	}
	op := &Takeover{Operator: &Operator{Subscription: "sub", Namespace: "ops", Package: "web", Version: "1.0.0", CSV: "web.v1.0.0"}, Managers: DefaultOLMHandOver}
	if _, _, deferred := op.HandOver(); deferred {
		t.Fatal("operator: an OLM operator's objects are written at once, not deferred")
	}
	if from := op.From(metav1.Time{}); from.Kind != KindSubscription || from.ClusterServiceVersion != "web.v1.0.0" {
		t.Fatalf("operator: From() = %+v", from)
	}
}

func TestAdoptedByOthers(t *testing.T) {
	inst := func(ns, name string, uids ...types.UID) *v1alpha1.ExtensionInstallation {
		i := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		for _, u := range uids {
			i.Status.AdoptedObjects = append(i.Status.AdoptedObjects, v1alpha1.AdoptedObject{UID: u})
		}
		return i
	}
	self := types.NamespacedName{Namespace: "team", Name: "web"}
	if got := AdoptedByOthers([]*v1alpha1.ExtensionInstallation{inst("team", "web", "u1"), inst("team", "db")}, self); got != nil {
		t.Fatalf("own adopted objects and none of others: got %v, want nil", got)
	}
	got := AdoptedByOthers([]*v1alpha1.ExtensionInstallation{inst("team", "web", "u1"), inst("ops", "db", "u2")}, self)
	if len(got) != 1 || got["u2"] != "ops/db" {
		t.Fatalf("got %v, want u2 held by ops/db", got)
	}
}
