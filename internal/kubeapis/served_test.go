package kubeapis

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func objectsOf(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, 0, len(docs))
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(d), &u.Object); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

const (
	pdbV1beta1 = `{apiVersion: policy/v1beta1, kind: PodDisruptionBudget, metadata: {name: redis}}`
	pdbV1      = `{apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: web, namespace: apps}}`
	configMap  = `{apiVersion: v1, kind: ConfigMap, metadata: {name: cfg}}`
	pspHook    = `{apiVersion: policy/v1beta1, kind: PodSecurityPolicy, metadata: {name: restricted, annotations: {helm.sh/hook: pre-install}}}`
	widgetCRD  = `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: widgets.example.dev},
		spec: {group: example.dev, scope: Namespaced, names: {kind: Widget, plural: widgets},
		versions: [{name: v1, served: true, storage: true}, {name: v1alpha1, served: false, storage: false}]}}`
	widgetV1       = `{apiVersion: example.dev/v1, kind: Widget, metadata: {name: w1}}`
	widgetV1alpha1 = `{apiVersion: example.dev/v1alpha1, kind: Widget, metadata: {name: w0}}`
	gadget         = `{apiVersion: example.dev/v1, kind: Gadget, metadata: {name: g}}`
)

var (
	pdbBeta = schema.GroupVersionKind{Group: "policy", Version: "v1beta1", Kind: "PodDisruptionBudget"}
	pdbGA   = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"}
	cm      = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	psp     = schema.GroupVersionKind{Group: "policy", Version: "v1beta1", Kind: "PodSecurityPolicy"}
	gadgetK = schema.GroupVersionKind{Group: "example.dev", Version: "v1", Kind: "Gadget"}
)

// A cluster of today: policy/v1 only, no PodSecurityPolicy, no Gadget.
var today = map[schema.GroupVersionKind]Answer{
	pdbBeta: {Versions: []string{"v1"}, Namespaced: true},
	pdbGA:   {Served: true, Namespaced: true},
	cm:      {Served: true, Namespaced: true},
	psp:     {},
	gadgetK: {},
}

func TestToAsk(t *testing.T) {
	objs := objectsOf(t, pdbV1beta1, configMap, widgetCRD, widgetV1, widgetV1alpha1, pdbV1beta1, pspHook)
	got := ToAsk(objs)
	// Every distinct kind once, in order; the kinds the release's own CRD
	// defines are not asked about; hooks are asked about like the rest.
	want := []schema.GroupVersionKind{pdbBeta, cm,
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, psp}
	if !slices.Equal(got, want) {
		t.Fatalf("ToAsk = %v, want %v", got, want)
	}
}

func TestUnserved(t *testing.T) {
	crd := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	answers := map[schema.GroupVersionKind]Answer{crd: {Served: true}}
	for k, v := range today {
		answers[k] = v
	}
	tests := []struct {
		name string
		docs []string
		want []string // UnservedObject.String() of each, in order
	}{
		{
			// Everything served: nothing to say.
			name: "all served",
			docs: []string{configMap, pdbV1},
		},
		{
			// A PodDisruptionBudget of before 1.25: placed in the release's
			// namespace (the kind is namespaced), the version the cluster
			// serves instead, the release that removed it, the replacement.
			name: "removed version of a served kind",
			docs: []string{configMap, pdbV1beta1},
			want: []string{"PodDisruptionBudget apps/redis: apiVersion policy/v1beta1 is not served (the cluster serves PodDisruptionBudget in policy/v1); Kubernetes 1.25 removed policy/v1beta1 PodDisruptionBudget: use policy/v1"},
		},
		{
			// A removed kind with no successor in its group, in a hook:
			// hooks count like every other object.
			name: "removed kind, in a hook",
			docs: []string{pspHook},
			want: []string{"PodSecurityPolicy restricted: apiVersion policy/v1beta1 is not served; Kubernetes 1.25 removed policy/v1beta1 PodSecurityPolicy: use Pod Security Admission"},
		},
		{
			// A kind no one serves and the table does not know: the
			// extension that brings it must come first.
			name: "unknown kind",
			docs: []string{gadget},
			want: []string{`Gadget g: apiVersion example.dev/v1 is not served (the cluster serves no kind "Gadget" in group "example.dev": the extension or CRD that provides it must be installed first)`},
		},
		{
			// A kind the release's own CRD defines is served in the
			// versions that CRD serves, whatever the cluster says now.
			name: "kind of a CRD of the release",
			docs: []string{widgetCRD, widgetV1, widgetV1alpha1},
			want: []string{"Widget apps/w0: apiVersion example.dev/v1alpha1 is not served (the cluster serves Widget in example.dev/v1)"},
		},
		{
			// An answer missing for a kind counts as not served.
			name: "no answer",
			docs: []string{`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: other}}`},
			want: []string{`Deployment other/web: apiVersion apps/v1 is not served (the cluster serves no kind "Deployment" in group "apps": the extension or CRD that provides it must be installed first)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, u := range Unserved(objectsOf(t, tt.docs...), answers, "apps") {
				got = append(got, u.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Unserved =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		group, version, kind string
		want                 string // "RemovedIn Use", "" when the table knows none
	}{
		// The removals the issue names, whatever the cluster's version.
		{"policy", "v1beta1", "PodDisruptionBudget", "1.25 policy/v1"},
		{"batch", "v1beta1", "CronJob", "1.25 batch/v1"},
		{"extensions", "v1beta1", "Ingress", "1.22 networking.k8s.io/v1"},
		{"networking.k8s.io", "v1beta1", "Ingress", "1.22 networking.k8s.io/v1"},
		{"apiextensions.k8s.io", "v1beta1", "CustomResourceDefinition", "1.22 apiextensions.k8s.io/v1"},
		{"rbac.authorization.k8s.io", "v1beta1", "ClusterRole", "1.22 rbac.authorization.k8s.io/v1"},
		{"admissionregistration.k8s.io", "v1beta1", "MutatingWebhookConfiguration", "1.22 admissionregistration.k8s.io/v1"},
		{"autoscaling", "v2beta1", "HorizontalPodAutoscaler", "1.25 autoscaling/v2"},
		{"autoscaling", "v2beta2", "HorizontalPodAutoscaler", "1.26 autoscaling/v2"},
		// flowcontrol v1beta1 went in 1.26 (the migration guide), v1beta2
		// in 1.29, v1beta3 in 1.32.
		{"flowcontrol.apiserver.k8s.io", "v1beta1", "FlowSchema", "1.26 flowcontrol.apiserver.k8s.io/v1"},
		{"flowcontrol.apiserver.k8s.io", "v1beta2", "FlowSchema", "1.29 flowcontrol.apiserver.k8s.io/v1"},
		{"flowcontrol.apiserver.k8s.io", "v1beta3", "PriorityLevelConfiguration", "1.32 flowcontrol.apiserver.k8s.io/v1"},
		{"storage.k8s.io", "v1beta1", "CSIStorageCapacity", "1.27 storage.k8s.io/v1"},
		{"discovery.k8s.io", "v1beta1", "EndpointSlice", "1.25 discovery.k8s.io/v1"},
		{"events.k8s.io", "v1beta1", "Event", "1.25 events.k8s.io/v1"},
		{"node.k8s.io", "v1beta1", "RuntimeClass", "1.25 node.k8s.io/v1"},
		// No API replaces PodSecurityPolicy.
		{"policy", "v1beta1", "PodSecurityPolicy", "1.25 Pod Security Admission"},
		// Served APIs, and kinds of a removed version the removal does not
		// cover, are not in the table.
		{"policy", "v1", "PodDisruptionBudget", ""},
		{"storage.k8s.io", "v1beta1", "VolumeAttributesClass", ""},
	}
	for _, tt := range tests {
		got := ""
		if r := Find(tt.group, tt.version, tt.kind); r != nil {
			got = r.RemovedIn + " " + r.Use
		}
		if got != tt.want {
			t.Errorf("Find(%s/%s %s) = %q, want %q", tt.group, tt.version, tt.kind, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	objs := objectsOf(t, pdbV1beta1, configMap, pdbV1beta1, widgetCRD, widgetV1)
	asked := map[schema.GroupVersionKind]int{}
	serves := func(gvk schema.GroupVersionKind) (Answer, error) {
		asked[gvk]++
		return Answer{Served: gvk != pdbBeta, Namespaced: gvk == pdbBeta, Versions: []string{"v1"}}, nil
	}
	unserved, err := Check(objs, "apps", serves)
	if err != nil {
		t.Fatal(err)
	}
	// Each kind asked once; the Widget its CRD defines not at all; the
	// beta PodDisruptionBudget (twice in objs) is what cannot be applied.
	for gvk, n := range asked {
		if n != 1 || gvk.Kind == "Widget" {
			t.Errorf("asked about %s %d times", gvk, n)
		}
	}
	if len(unserved) != 2 || unserved[0].Kind != "PodDisruptionBudget" || unserved[0].Namespace != "apps" {
		t.Errorf("Check = %+v, want the two PodDisruptionBudgets in apps", unserved)
	}
	// An error answering stops the check with it.
	boom := errors.New("discovery failed")
	if _, err := Check(objs, "apps", func(schema.GroupVersionKind) (Answer, error) { return Answer{}, boom }); !errors.Is(err, boom) {
		t.Errorf("Check error = %v, want %v", err, boom)
	}
}
