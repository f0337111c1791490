package gate

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func policy(name string, preset v1alpha1.ApprovalPreset, require ...v1alpha1.ApprovalRequirement) v1alpha1.ApprovalPolicy {
	return v1alpha1.ApprovalPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ApprovalPolicySpec{Preset: preset, Require: require}}
}

func TestRequired(t *testing.T) {
	major := policy("majors", "", v1alpha1.ApprovalMajor)
	growth := policy("growth", "", v1alpha1.ApprovalPermissionGrowth, v1alpha1.ApprovalCRDChange)
	for _, tc := range []struct {
		name     string
		policies []v1alpha1.ApprovalPolicy
		facts    ChangeFacts
		reasons  []string
		names    []string
	}{
		// No policy: Automatic, as before approvals existed.
		{name: "no policy", facts: ChangeFacts{From: "1.0.0", To: "2.0.0"}},
		// The preset Automatic requires nothing, even of a major upgrade.
		{name: "automatic", policies: []v1alpha1.ApprovalPolicy{policy("auto", v1alpha1.ApprovalAutomatic)},
			facts: ChangeFacts{From: "1.0.0", To: "2.0.0"}},
		// Manual requires approval of new values of the same version too.
		{name: "manual, same version", policies: []v1alpha1.ApprovalPolicy{policy("manual", v1alpha1.ApprovalManual)},
			facts:   ChangeFacts{From: "1.0.0", To: "1.0.0"},
			reasons: []string{"Manual: every change of 1.0.0 (new values or content)"}, names: []string{"manual"}},
		// Major: a minor upgrade passes, a major one does not.
		{name: "minor under Major", policies: []v1alpha1.ApprovalPolicy{major}, facts: ChangeFacts{From: "1.4.2", To: "1.5.0"}},
		{name: "major under Major", policies: []v1alpha1.ApprovalPolicy{major}, facts: ChangeFacts{From: "1.4.2", To: "2.0.0"},
			reasons: []string{"Major: 1.4.2 → 2.0.0"}, names: []string{"majors"}},
		// A downgrade is not a major upgrade, even across majors.
		{name: "downgrade under Major", policies: []v1alpha1.ApprovalPolicy{major}, facts: ChangeFacts{From: "2.0.0", To: "1.9.0"}},
		{name: "downgrade", policies: []v1alpha1.ApprovalPolicy{policy("down", "", v1alpha1.ApprovalDowngrade)},
			facts: ChangeFacts{From: "2.0.0", To: "1.9.0"}, reasons: []string{"Downgrade: 2.0.0 → 1.9.0"}, names: []string{"down"}},
		// A pre-release step is a patch.
		{name: "pre-release", policies: []v1alpha1.ApprovalPolicy{policy("patch", "", v1alpha1.ApprovalPatch)},
			facts: ChangeFacts{From: "1.0.0-rc.1", To: "1.0.0"}, reasons: []string{"Patch: 1.0.0-rc.1 → 1.0.0"}, names: []string{"patch"}},
		// A first install is neither an upgrade nor a downgrade.
		{name: "first install", policies: []v1alpha1.ApprovalPolicy{major, policy("first", "", v1alpha1.ApprovalFirstInstall)},
			facts: ChangeFacts{To: "2.0.0"}, reasons: []string{"FirstInstall: installs 2.0.0"}, names: []string{"first"}},
		// Several policies: the union of what they require, each reason
		// once, every policy that requires it named.
		{name: "union", policies: []v1alpha1.ApprovalPolicy{major, growth, policy("majors-too", "", v1alpha1.ApprovalMajor)},
			facts:   ChangeFacts{From: "1.0.0", To: "2.0.0", PermissionsGrow: []string{"get on secrets cluster-wide"}, CRDChanges: []string{"creates CustomResourceDefinition a.example.com"}},
			reasons: []string{"Major: 1.0.0 → 2.0.0", "PermissionGrowth: get on secrets cluster-wide", "CRDChange: creates CustomResourceDefinition a.example.com"},
			names:   []string{"growth", "majors", "majors-too"}},
		// Versions that are not semver and differ count as a major step.
		{name: "not semver", policies: []v1alpha1.ApprovalPolicy{major}, facts: ChangeFacts{From: "latest", To: "stable"},
			reasons: []string{"Major: latest → stable"}, names: []string{"majors"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Required(tc.policies, tc.facts)
			if !slices.Equal(v.Reasons, tc.reasons) || !slices.Equal(v.Policies, tc.names) {
				t.Fatalf("got reasons %q policies %q, want %q %q", v.Reasons, v.Policies, tc.reasons, tc.names)
			}
		})
	}
}

func TestSelects(t *testing.T) {
	s := Subject{Namespace: "team-a", Extension: "podinfo", NamespaceLabels: map[string]string{"tier": "prod"}}
	for _, tc := range []struct {
		name string
		sel  v1alpha1.ApprovalSelector
		want bool
	}{
		// An empty selector selects every installation.
		{name: "empty", want: true},
		{name: "namespace", sel: v1alpha1.ApprovalSelector{Namespaces: []string{"team-b", "team-a"}}, want: true},
		{name: "other namespace", sel: v1alpha1.ApprovalSelector{Namespaces: []string{"team-b"}}},
		// Every criterion set must match.
		{name: "namespace but not extension", sel: v1alpha1.ApprovalSelector{Namespaces: []string{"team-a"}, Extensions: []string{"cert-manager"}}},
		{name: "namespace labels", sel: v1alpha1.ApprovalSelector{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}}, want: true},
		{name: "other namespace labels", sel: v1alpha1.ApprovalSelector{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "dev"}}}},
		// The hub is "hub" in the cluster list, and no ManagedCluster.
		{name: "hub by name", sel: v1alpha1.ApprovalSelector{Clusters: []string{"hub"}}, want: true},
		{name: "hub and a cluster selector", sel: v1alpha1.ApprovalSelector{ClusterSelector: &metav1.LabelSelector{}}},
		// A selector that does not parse selects, to err on the side of
		// approval.
		{name: "broken selector", sel: v1alpha1.ApprovalSelector{NamespaceSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Sometimes"}}}}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Selects(tc.sel, s); got != tc.want {
				t.Fatalf("Selects = %v, want %v", got, tc.want)
			}
		})
	}
	onCluster := Subject{Namespace: "fleet", Extension: "podinfo", Cluster: "eu-1", ClusterLabels: map[string]string{"env": "prod"}}
	if !Selects(v1alpha1.ApprovalSelector{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, onCluster) ||
		Selects(v1alpha1.ApprovalSelector{Clusters: []string{"hub"}}, onCluster) {
		t.Fatal("a managed cluster is selected by its labels and its name, not as the hub")
	}
}

func TestCRDChanges(t *testing.T) {
	const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %s}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [%s]
`
	installed := objects(t, fmt.Sprintf(crd, "widgets.example.com", "{name: v1, served: true, storage: true}")+"---\n"+
		fmt.Sprintf(crd, "gadgets.example.com", "{name: v1, served: true, storage: true}")+"---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	next := objects(t, fmt.Sprintf(crd, "widgets.example.com", "{name: v1, served: true, storage: false}, {name: v2, served: true, storage: true}")+"---\n"+
		fmt.Sprintf(crd, "gizmos.example.com", "{name: v1, served: true, storage: true}"))
	got := CRDChanges(installed, next)
	want := []string{
		"creates CustomResourceDefinition gizmos.example.com",
		"changes CustomResourceDefinition widgets.example.com (spec.versions)",
		"no longer ships CustomResourceDefinition gadgets.example.com",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("CRDChanges:\n got %q\nwant %q", got, want)
	}
	if got := CRDChanges(next, next); len(got) != 0 {
		t.Fatalf("the same CRDs changed: %q", got)
	}
}
