package resolve

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

const widget = "widgets.example.com/v1/Widget"

// operatorVersion is an operator version of catalog cat that owns and requires
// APIs: operatorVersion("1.0.0", "ops", owning(widget), requires(gadget)).
func operatorVersion(version, cat string, opts ...func(*v1alpha1.OperatorInfo)) v1alpha1.ExtensionVersion {
	v := ev(version, "")
	v.Engine = v1alpha1.EngineBundle
	v.Source.Catalog = cat
	v.Operator = &v1alpha1.OperatorInfo{}
	for _, o := range opts {
		o(v.Operator)
	}
	return v
}

func owning(api string) func(*v1alpha1.OperatorInfo) {
	return func(o *v1alpha1.OperatorInfo) { o.OwnedAPIs = append(o.OwnedAPIs, api) }
}

func requires(api string) func(*v1alpha1.OperatorInfo) {
	return func(o *v1alpha1.OperatorInfo) { o.RequiredAPIs = append(o.RequiredAPIs, api) }
}

func requiresPackage(name, rng string) func(*v1alpha1.OperatorInfo) {
	return func(o *v1alpha1.OperatorInfo) {
		o.RequiredPackages = append(o.RequiredPackages, v1alpha1.Dependency{Name: name, Version: rng})
	}
}

// Required APIs and packages of operator bundles become dependencies on
// the extensions that provide them, solved like any other: the
// provider is selected (and added when nothing asks for it), installed
// first, explained when none can be.
func TestRequiredAPIs(t *testing.T) {
	for _, tt := range []struct {
		name     string
		universe Universe
		insts    []Installation
		provided map[string]string // Problem.Provided
		// selected is "extension version" of every Selection in install
		// order; added the Added extensions.
		selected, added []string
		// providers is the choices of app's selected version, as
		// "API → provider range (reason)".
		providers []string
		// failed, reason and message, when app cannot be installed.
		reason, message string
	}{
		{
			// One provider, in another catalog: added, installed first,
			// within the versions that own the API.
			name: "one provider from another catalog",
			universe: Universe{
				"app":     {operatorVersion("1.0.0", "apps", requires(widget))},
				"widgets": {operatorVersion("0.9.0", "ops"), operatorVersion("1.0.0", "ops", owning(widget)), operatorVersion("1.1.0", "ops", owning(widget))},
			},
			insts:     []Installation{want("team/app", "app", "")},
			selected:  []string{"widgets 1.1.0", "app 1.0.0"},
			added:     []string{"widgets"},
			providers: []string{widget + " → widgets >=1.0.0 (the only extension that owns it)"},
		},
		{
			// Two providers, neither on the cluster nor named: the one
			// from the bundle's own catalog.
			name: "two providers: the bundle's catalog",
			universe: Universe{
				"app":        {operatorVersion("1.0.0", "ops", requires(widget))},
				"widgets":    {operatorVersion("1.0.0", "community", owning(widget))},
				"widgets-ee": {operatorVersion("2.0.0", "ops", owning(widget))},
			},
			insts:     []Installation{want("team/app", "app", "")},
			selected:  []string{"widgets-ee 2.0.0", "app 1.0.0"},
			added:     []string{"widgets-ee"},
			providers: []string{widget + " → widgets-ee  (it comes from the bundle's own catalog ops)"},
		},
		{
			// Two providers from other catalogs: the first by name, and
			// the reason says how to choose another.
			name: "two providers: first by name",
			universe: Universe{
				"app":        {operatorVersion("1.0.0", "apps", requires(widget))},
				"widgets":    {operatorVersion("1.0.0", "community", owning(widget))},
				"widgets-ee": {operatorVersion("2.0.0", "ops", owning(widget))},
			},
			insts:     []Installation{want("team/app", "app", "")},
			selected:  []string{"widgets 1.0.0", "app 1.0.0"},
			added:     []string{"widgets"},
			providers: []string{widget + " → widgets  (the first by name of widgets, widgets-ee; install another one to choose it)"},
		},
		{
			// Two providers, one of them installed on the cluster: it
			// meets the requirement, nothing is added.
			name: "two providers: the installed one",
			universe: Universe{
				"app":        {operatorVersion("1.0.0", "apps", requires(widget))},
				"widgets":    {operatorVersion("1.0.0", "community", owning(widget))},
				"widgets-ee": {operatorVersion("2.0.0", "ops", owning(widget))},
			},
			insts:     []Installation{want("team/app", "app", ""), auto("infra/widgets-ee", "widgets-ee", "", "2.0.0", false)},
			selected:  []string{"widgets-ee 2.0.0", "app 1.0.0"},
			providers: []string{widget + " → widgets-ee  (an installation on the cluster already asks for it)"},
		},
		{
			// A chart (no bundle, nothing in the catalogs says it owns
			// the API) whose installation owns the API's CRD on the
			// cluster: it meets the requirement, nothing is added.
			name: "the CRD's owner on the cluster",
			universe: Universe{
				"app":         {operatorVersion("1.0.0", "apps", requires(widget))},
				"widget-crds": {ev("3.0.0", "")},
				"widgets":     {operatorVersion("1.0.0", "apps", owning(widget))},
			},
			insts:     []Installation{want("team/app", "app", ""), auto("infra/widget-crds", "widget-crds", "", "3.0.0", false)},
			provided:  map[string]string{widget: "widget-crds"},
			selected:  []string{"widget-crds 3.0.0", "app 1.0.0"},
			providers: []string{widget + " → widget-crds  (its installation on the cluster owns the API's CRD)"},
		},
		{
			// Two providers, one named by olm.package.required too.
			name: "two providers: the required package",
			universe: Universe{
				"app":        {operatorVersion("1.0.0", "apps", requires(widget), requiresPackage("widgets-ee", ">=2.0.0"))},
				"widgets":    {operatorVersion("1.0.0", "apps", owning(widget))},
				"widgets-ee": {operatorVersion("2.0.0", "ops", owning(widget))},
			},
			insts:     []Installation{want("team/app", "app", "")},
			selected:  []string{"widgets-ee 2.0.0", "app 1.0.0"},
			added:     []string{"widgets-ee"},
			providers: []string{widget + " → widgets-ee  (the bundle requires the package (olm.package.required))"},
		},
		{
			// olm.package.required alone is a dependency with its range.
			name: "required package",
			universe: Universe{
				"app":     {operatorVersion("1.0.0", "apps", requiresPackage("widgets", "<1.1.0"))},
				"widgets": {operatorVersion("1.0.0", "ops"), operatorVersion("1.1.0", "ops")},
			},
			insts:    []Installation{want("team/app", "app", "")},
			selected: []string{"widgets 1.0.0", "app 1.0.0"},
			added:    []string{"widgets"},
		},
		{
			// Kubernetes' own APIs and the bundle's own need no provider.
			name: "builtin and own APIs",
			universe: Universe{
				"app": {operatorVersion("1.0.0", "apps", requires("v1/ConfigMap"), requires("apps/v1/Deployment"),
					requires("networking.k8s.io/v1/Ingress"), owning(widget), requires(widget))},
				"widgets": {operatorVersion("1.0.0", "ops", owning(widget))},
			},
			insts:    []Installation{want("team/app", "app", "")},
			selected: []string{"app 1.0.0"},
		},
		{
			// No extension owns the API: the explanation names it and
			// the catalogs searched.
			name: "no provider",
			universe: Universe{
				"app":     {operatorVersion("1.0.0", "apps", requires(widget))},
				"gadgets": {operatorVersion("1.0.0", "ops", owning("gadgets.example.com/v1/Gadget"))},
			},
			insts:  []Installation{want("team/app", "app", "")},
			reason: v1alpha1.ReasonNoMatchingVersion,
			message: "team/app wants any version of app; app 1.0.0 needs API " + widget +
				", but no extension of the catalogs apps, ops owns it. Add a Catalog with an operator that owns " + widget + ".",
		},
		{
			// Two operators that require each other's APIs: a cycle.
			name: "cycle",
			universe: Universe{
				"app":     {operatorVersion("1.0.0", "apps", requires(widget), owning("apps.example.com/v1/App"))},
				"widgets": {operatorVersion("1.0.0", "ops", owning(widget), requires("apps.example.com/v1/App"))},
			},
			insts:   []Installation{want("team/app", "app", "")},
			reason:  ReasonDependencyCycle,
			message: "app 1.0.0 → widgets 1.0.0 → app 1.0.0",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ix := NewIndex(tt.universe)
			res := ix.Solve(Problem{ClusterVersion: "v1.33.0", Installations: tt.insts, Provided: tt.provided})
			if ex := res.Failed["team/app"]; ex != nil || tt.reason != "" {
				switch {
				case ex == nil:
					t.Fatalf("team/app solved as %+v, want %s", res.Selected["app"], tt.reason)
				case ex.Reason != tt.reason || tt.reason != ReasonDependencyCycle && ex.Message != tt.message ||
					tt.reason == ReasonDependencyCycle && !strings.Contains(ex.Message, tt.message):
					t.Fatalf("failed with %s: %s\nwant %s: %s", ex.Reason, ex.Message, tt.reason, tt.message)
				}
				return
			}
			var selected, added, providers []string
			for _, key := range res.InstallOrder {
				selected = append(selected, key+" "+res.Selected[key].Version.Version)
			}
			for _, a := range res.Added {
				added = append(added, a.Extension)
			}
			for _, c := range res.Selected["app"].Providers {
				providers = append(providers, fmt.Sprintf("%s → %s %s (%s)", c.API, c.Provider, c.Range, c.Reason))
			}
			if !reflect.DeepEqual(selected, tt.selected) || !reflect.DeepEqual(added, tt.added) || !reflect.DeepEqual(providers, tt.providers) {
				t.Errorf("selected %q, added %q, providers %q\nwant %q, %q, %q", selected, added, providers, tt.selected, tt.added, tt.providers)
			}
			// The same problem again gives the same answer (a variant
			// for the cluster is kept, not rebuilt differently).
			if again := ix.Solve(Problem{ClusterVersion: "v1.33.0", Installations: tt.insts, Provided: tt.provided}); !reflect.DeepEqual(again.InstallOrder, res.InstallOrder) {
				t.Errorf("solved again: %v, first %v", again.InstallOrder, res.InstallOrder)
			}
		})
	}
}

// ownersRange admits exactly the versions that own the API.
func TestOwnersRange(t *testing.T) {
	versions := func(owning ...bool) []v1alpha1.ExtensionVersion {
		var out []v1alpha1.ExtensionVersion
		for i, o := range owning {
			v := operatorVersion(fmt.Sprintf("1.%d.0", i), "ops")
			if o {
				v.Operator.OwnedAPIs = []string{widget}
			}
			out = append(out, v)
		}
		return out
	}
	for _, tt := range []struct {
		owning []bool
		want   string
	}{
		{[]bool{true, true}, ""},                               // every version
		{[]bool{false, true, true}, ">=1.1.0"},                 // from one on
		{[]bool{true, true, false}, ">=1.0.0 <=1.1.0"},         // up to one
		{[]bool{true, false, true}, "=1.0.0 || =1.2.0"},        // with a gap
		{[]bool{false, true, false, true}, "=1.1.0 || =1.3.0"}, // gaps on both sides
	} {
		if got := ownersRange(versions(tt.owning...), widget); got != tt.want {
			t.Errorf("owning %v: %q, want %q", tt.owning, got, tt.want)
		}
	}
}

// UniverseWithRequirements gives the dependencies Solve uses on a cluster:
// the provider an installation asks for, else the rule's choice.
func TestUniverseWithRequirements(t *testing.T) {
	extensions := []v1alpha1.Extension{
		{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{operatorVersion("1.0.0", "apps", requires(widget))}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "widgets"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{operatorVersion("1.0.0", "community", owning(widget))}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "widgets-ee"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{operatorVersion("2.0.0", "ops", owning(widget))}}},
	}
	for _, tt := range []struct {
		onCluster []string
		want      string
	}{
		{nil, "widgets"},
		{[]string{"app", "widgets-ee"}, "widgets-ee"},
		{[]string{"widgets", "widgets-ee"}, "widgets"},
	} {
		u := UniverseWithRequirements(extensions, tt.onCluster, nil)
		if deps := u["app"][0].Dependencies; len(deps) != 1 || deps[0].Name != tt.want {
			t.Errorf("on a cluster with %v: app depends on %+v, want %s", tt.onCluster, deps, tt.want)
		}
		if len(extensions[0].Spec.Versions[0].Dependencies) != 0 {
			t.Fatal("the extensions given were modified")
		}
	}
}

// RequiredAPIGroups: the groups the asked extensions require, without
// Kubernetes' own.
func TestRequiredAPIGroups(t *testing.T) {
	extensions := []v1alpha1.Extension{
		{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			operatorVersion("1.0.0", "apps", requires(widget), requires("v1/ConfigMap")),
			operatorVersion("2.0.0", "apps", requires("gadgets.example.com/v1/Gadget"), requires("apps/v1/Deployment")),
		}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			operatorVersion("1.0.0", "apps", requires("others.example.com/v1/Other")),
		}}},
	}
	if got := RequiredAPIGroups(extensions, []string{"app", "unknown"}); !reflect.DeepEqual(got, []string{"gadgets.example.com", "widgets.example.com"}) {
		t.Errorf("groups %v, want gadgets.example.com and widgets.example.com", got)
	}
	if got := RequiredAPIGroups(extensions, nil); got != nil {
		t.Errorf("nothing asked: %v", got)
	}
}
