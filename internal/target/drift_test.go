package target

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestDrifted(t *testing.T) {
	deploy := v1alpha1.ObjectReference{Kind: "Deployment", Namespace: "web", Name: "web"}
	role := v1alpha1.ObjectReference{Kind: "ClusterRole", Name: "web"}
	for _, tc := range []struct {
		name   string
		drifts []Drift
		want   []v1alpha1.DriftedObject
	}{
		// Nothing drifted is an empty list.
		{name: "none", want: []v1alpha1.DriftedObject{}},
		// A changed object lists the fields that differ.
		{name: "changed", drifts: []Drift{{Object: deploy, Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image"}}},
			want: []v1alpha1.DriftedObject{{ObjectReference: deploy, Fields: []string{"spec.replicas", "spec.template.spec.containers[web].image"}}}},
		// A deleted object says so, whatever fields the diff listed.
		{name: "deleted", drifts: []Drift{{Object: role, Missing: true, Fields: []string{"rules"}}},
			want: []v1alpha1.DriftedObject{{ObjectReference: role, Fields: []string{"deleted"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Drifted(tc.drifts); !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("Drifted() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDescribeDrift(t *testing.T) {
	many := make([]v1alpha1.DriftedObject, 7)
	for i := range many {
		many[i] = v1alpha1.DriftedObject{ObjectReference: v1alpha1.ObjectReference{Kind: "ConfigMap", Namespace: "web", Name: fmt.Sprint("cm", i)}, Fields: []string{"data"}}
	}
	for _, tc := range []struct {
		name string
		objs []v1alpha1.DriftedObject
		want string
	}{
		// A namespaced object is named namespace/name, a cluster-scoped
		// one by its name; each with its fields.
		{name: "both scopes", objs: []v1alpha1.DriftedObject{
			{ObjectReference: v1alpha1.ObjectReference{Kind: "Deployment", Namespace: "web", Name: "web"}, Fields: []string{"spec.replicas", "metadata.labels"}},
			{ObjectReference: v1alpha1.ObjectReference{Kind: "ClusterRole", Name: "web"}, Fields: []string{"deleted"}},
		}, want: "Deployment web/web (spec.replicas, metadata.labels); ClusterRole web (deleted)"},
		// Past five objects, the rest are counted.
		{name: "many", objs: many,
			want: "ConfigMap web/cm0 (data); ConfigMap web/cm1 (data); ConfigMap web/cm2 (data); ConfigMap web/cm3 (data); ConfigMap web/cm4 (data); and 2 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DescribeDrift(tc.objs); got != tc.want {
				t.Errorf("DescribeDrift() = %q, want %q", got, tc.want)
			}
		})
	}
}
