package depend

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/resolve"
)

// inst is an installation ns/name of ext, running installed ("" for none).
func inst(ns, name, ext, installed string) *v1alpha1.ExtensionInstallation {
	return &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: ext, Cluster: "edge"},
		Status:     v1alpha1.ExtensionInstallationStatus{InstalledVersion: installed},
	}
}

func deleting(i *v1alpha1.ExtensionInstallation) *v1alpha1.ExtensionInstallation {
	now := metav1.Now()
	i.DeletionTimestamp = &now
	return i
}

// version is ext's version v depending on deps (names, any version).
func version(v string, deps ...string) v1alpha1.ExtensionVersion {
	out := v1alpha1.ExtensionVersion{Version: v}
	for _, d := range deps {
		out.Dependencies = append(out.Dependencies, v1alpha1.Dependency{Name: d})
	}
	return out
}

func extension(name string, versions ...v1alpha1.ExtensionVersion) v1alpha1.Extension {
	return v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ExtensionSpec{Versions: versions}}
}

// catalog: app 1 and 2 need db, tool needs nothing, db has no dependency.
func catalog() []v1alpha1.Extension {
	return []v1alpha1.Extension{
		extension("app", version("1.0.0", "db"), version("2.0.0", "db")),
		extension("db", version("1.0.0")),
		extension("tool", version("1.0.0")),
	}
}

func selected(ext, v, instance string, deps ...string) resolve.Selection {
	return resolve.Selection{Extension: ext, Version: version(v, deps...), Instance: instance}
}

func TestRequiredBy(t *testing.T) {
	db := inst("a", "db", "db", "1.0.0")
	app := inst("a", "app", "app", "1.0.0")
	app2 := inst("b", "app", "app", "")
	appInstance := inst("c", "app", "app", "")
	tool := inst("a", "tool", "tool", "1.0.0")
	failedApp := inst("d", "old", "app", "1.0.0")
	failedNew := inst("d", "new", "app", "")
	for _, tc := range []struct {
		name  string
		of    *v1alpha1.ExtensionInstallation
		insts []*v1alpha1.ExtensionInstallation
		res   *resolve.Resolution
		want  []string
	}{
		// Every installation of the shared version that depends on db.
		{"shared dependents", db, []*v1alpha1.ExtensionInstallation{db, app2, app, tool},
			&resolve.Resolution{Selected: map[string]resolve.Selection{
				"app": selected("app", "1.0.0", "", "db"), "db": selected("db", "1.0.0", ""), "tool": selected("tool", "1.0.0", ""),
			}}, []string{"a/app", "b/app"}},
		// An instance that depends on db needs it; one of the shared
		// version's extension running as an instance of its own that
		// does not, does not.
		{"instances", db, []*v1alpha1.ExtensionInstallation{db, app, appInstance},
			&resolve.Resolution{Selected: map[string]resolve.Selection{
				"app":                               selected("app", "2.0.0", ""),
				resolve.InstanceKey("app", "c/app"): selected("app", "1.0.0", "c/app", "db"),
				"db":                                selected("db", "1.0.0", ""),
			}}, []string{"c/app"}},
		// An instance serves no dependency: nothing requires it.
		{"an instance is not required", appInstance, []*v1alpha1.ExtensionInstallation{app, appInstance, tool},
			&resolve.Resolution{Selected: map[string]resolve.Selection{
				"tool":                              selected("tool", "1.0.0", "", "app"),
				"app":                               selected("app", "2.0.0", ""),
				resolve.InstanceKey("app", "c/app"): selected("app", "1.0.0", "c/app"),
			}}, nil},
		// Nothing depends on db and nothing failed.
		{"nothing depends", db, []*v1alpha1.ExtensionInstallation{db, tool},
			&resolve.Resolution{Selected: map[string]resolve.Selection{"db": selected("db", "1.0.0", ""), "tool": selected("tool", "1.0.0", "")}}, nil},
		// No version fits d/old any more; it keeps running app 1.0.0,
		// which needs db. d/new failed too but runs nothing yet.
		{"a failed installation keeps running", db, []*v1alpha1.ExtensionInstallation{db, failedApp, failedNew},
			&resolve.Resolution{Selected: map[string]resolve.Selection{"db": selected("db", "1.0.0", "")},
				Failed: map[string]*resolve.Explanation{"d/old": {}, "d/new": {}}}, []string{"d/old"}},
	} {
		c := &Cluster{Installations: tc.insts, Extensions: catalog(), Resolution: tc.res}
		if got := RequiredBy(c, tc.of); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: RequiredBy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHeldBy(t *testing.T) {
	db := inst("a", "db", "db", "1.0.0")
	for _, tc := range []struct {
		name  string
		insts []*v1alpha1.ExtensionInstallation
		want  []string
	}{
		// Installed versions that depend on db hold it, one being
		// uninstalled too (it says so); one not installed yet does not.
		{"dependents", []*v1alpha1.ExtensionInstallation{db, inst("b", "app", "app", "2.0.0"), deleting(inst("a", "app", "app", "1.0.0")),
			inst("c", "app", "app", ""), inst("a", "tool", "tool", "1.0.0")},
			[]string{"a/app (app 1.0.0, being uninstalled)", "b/app (app 2.0.0)"}},
		// Another live installation of db serves the dependents.
		{"another db lives", []*v1alpha1.ExtensionInstallation{db, inst("b", "db", "db", "1.0.0"), inst("b", "app", "app", "2.0.0")}, nil},
		// Another installation of db being deleted serves nobody.
		{"another db goes too", []*v1alpha1.ExtensionInstallation{db, deleting(inst("b", "db", "db", "1.0.0")), inst("b", "app", "app", "2.0.0")},
			[]string{"b/app (app 2.0.0)"}},
		// Nothing depends on db.
		{"free", []*v1alpha1.ExtensionInstallation{db, inst("a", "tool", "tool", "1.0.0")}, nil},
	} {
		if got := HeldBy(&Cluster{Installations: tc.insts, Extensions: catalog()}, db); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: HeldBy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// An operator's required API holds the extension whose installation
// provides it on the cluster (Cluster.Provided).
func TestHeldByProvidedAPI(t *testing.T) {
	crds := inst("a", "crds", "crds", "1.0.0")
	user := inst("a", "user", "user", "1.0.0")
	exts := []v1alpha1.Extension{
		extension("crds", version("1.0.0")),
		extension("user", v1alpha1.ExtensionVersion{Version: "1.0.0", Operator: &v1alpha1.OperatorInfo{RequiredAPIs: []string{"x.io/v1/X"}}}),
	}
	c := &Cluster{Installations: []*v1alpha1.ExtensionInstallation{crds, user}, Extensions: exts}
	if got := HeldBy(c, crds); got != nil {
		t.Errorf("not known to provide it: HeldBy = %v, want none", got)
	}
	c.Provided = map[string]string{"x.io/v1/X": "crds"}
	if got := HeldBy(c, crds); !reflect.DeepEqual(got, []string{"a/user (user 1.0.0)"}) {
		t.Errorf("providing it: HeldBy = %v, want a/user", got)
	}
}

// Installations being deleted meet dependencies; instances and the
// installation itself do not.
func TestPresent(t *testing.T) {
	self := inst("a", "app", "app", "")
	db := deleting(inst("a", "db", "db", "1.0.0"))
	shared, instance := inst("a", "tool", "tool", "1.0.0"), inst("b", "tool", "tool", "0.9.0")
	c := &Cluster{Installations: []*v1alpha1.ExtensionInstallation{self, db, shared, instance}, Resolution: &resolve.Resolution{Selected: map[string]resolve.Selection{
		"tool": selected("tool", "1.0.0", ""), resolve.InstanceKey("tool", "b/tool"): selected("tool", "0.9.0", "b/tool"),
	}}}
	want := map[string][]resolve.Present{
		"db":   {{Installation: "a/db", Version: "1.0.0"}},
		"tool": {{Installation: "a/tool", Version: "1.0.0"}},
	}
	if got := Present(c, self); !reflect.DeepEqual(got, want) {
		t.Errorf("Present = %v, want %v", got, want)
	}
}

func TestAdditions(t *testing.T) {
	app := inst("team", "app", "app", "")
	chosen := v1alpha1.ExtensionVersion{Version: "1.0.0", Dependencies: []v1alpha1.Dependency{{Name: "db", Version: "^1"}, {Name: "cache"}, {Name: "tool"}}}
	tool := inst("other", "tool", "tool", "1.0.0")
	dbInstance := inst("other", "db", "db", "0.9.0")
	c := &Cluster{Installations: []*v1alpha1.ExtensionInstallation{app, tool, dbInstance}, Resolution: &resolve.Resolution{Selected: map[string]resolve.Selection{
		"tool": selected("tool", "1.0.0", ""), resolve.InstanceKey("db", "other/db"): selected("db", "0.9.0", "other/db"),
	}}}
	got := Additions(c, app, chosen, "apps")
	// tool is installed; db runs only as an instance, so it gets an
	// installation of its own, as cache does.
	if len(got) != 2 || got[0].Dependency.Name != "db" || got[1].Dependency.Name != "cache" {
		t.Fatalf("Additions = %+v, want db and cache", got)
	}
	want := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team", Name: "db-edge",
			Labels:      map[string]string{v1alpha1.LabelAddedFor: "dependencies"},
			Annotations: map[string]string{v1alpha1.AnnotationRequiredBy: "team/app (app 1.0.0 needs db ^1)"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation", Name: "app", UID: "uid-app",
			}},
		},
		Spec: v1alpha1.ExtensionInstallationSpec{Extension: "db", Version: "*", Cluster: "edge", TargetNamespace: "apps"},
	}
	if !reflect.DeepEqual(got[0].Installation, want) {
		t.Errorf("db's installation:\n got %+v\nwant %+v", got[0].Installation, want)
	}
	if a := got[1].Installation.Annotations[v1alpha1.AnnotationRequiredBy]; a != "team/app (app 1.0.0 needs cache *)" {
		t.Errorf("cache's annotation %q: an empty range reads *", a)
	}
	// A name taken says by what, when it could be read, and what to do.
	if msg := got[0].Taken(inst("team", "db-edge", "other", "")); msg != `app 1.0.0 needs db ^1 on cluster edge, and the name team/db-edge for its installation `+
		`is taken by an installation of other on cluster edge; create an ExtensionInstallation of db with spec.cluster "edge" yourself` {
		t.Errorf("Taken: %s", msg)
	}
	if msg := got[1].Taken(nil); !strings.Contains(msg, "needs cache * on cluster edge, and the name team/cache-edge for its installation is taken by another installation;") {
		t.Errorf("Taken(nil): %s", msg)
	}
	if none := Additions(c, app, version("1.0.0"), "apps"); none != nil {
		t.Errorf("no dependencies: Additions = %+v", none)
	}
}

func TestOwners(t *testing.T) {
	ref := func(i *v1alpha1.ExtensionInstallation) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation", Name: i.Name, UID: i.UID}
	}
	x, y, far := inst("a", "x", "app", ""), inst("a", "y", "app", ""), inst("b", "z", "app", "")
	added := func(requiredBy []string, owners ...metav1.OwnerReference) *v1alpha1.ExtensionInstallation {
		db := inst("a", "db-edge", "db", "1.0.0")
		db.Labels = map[string]string{v1alpha1.LabelAddedFor: "dependencies"}
		db.Status.RequiredBy, db.OwnerReferences = requiredBy, owners
		return db
	}
	for _, tc := range []struct {
		name   string
		of     *v1alpha1.ExtensionInstallation
		want   []metav1.OwnerReference
		change bool
	}{
		// Owned by those in its namespace that need it, by name; the
		// one in another namespace cannot own it.
		{"new owners", added([]string{"a/y", "a/x", "b/z"}, ref(x)), []metav1.OwnerReference{ref(x), ref(y)}, true},
		// The same owners already: nothing to write.
		{"same", added([]string{"a/x", "a/y"}, ref(x), ref(y)), nil, false},
		// Nobody in its namespace needs it: its owners stay until Annex
		// releases it.
		{"unneeded", added([]string{"b/z"}, ref(x)), nil, false},
		// Not added for dependencies: its owners are the user's.
		{"not added", inst("a", "db", "db", "1.0.0"), nil, false},
	} {
		c := &Cluster{Installations: []*v1alpha1.ExtensionInstallation{tc.of, y, far, x}}
		got, change := Owners(c, tc.of)
		if change != tc.change || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: Owners = %v, %v; want %v, %v", tc.name, got, change, tc.want, tc.change)
		}
	}
}

func TestRequiredCRDsAndServedAPIs(t *testing.T) {
	withCRDs := func(i *v1alpha1.ExtensionInstallation, names ...string) *v1alpha1.ExtensionInstallation {
		for _, n := range names {
			i.Status.Inventory = append(i.Status.Inventory, v1alpha1.ObjectReference{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: n})
		}
		i.Status.Inventory = append(i.Status.Inventory, v1alpha1.ObjectReference{Kind: "ConfigMap", Name: "x.cache.io"})
		return i
	}
	exts := []v1alpha1.Extension{
		extension("user", v1alpha1.ExtensionVersion{Version: "1.0.0", Operator: &v1alpha1.OperatorInfo{RequiredAPIs: []string{"cache.io/v1/Memcached", "apps/v1/Deployment"}}}),
		extension("memcached", version("1.0.0")),
		extension("other", version("1.0.0")),
	}
	second := withCRDs(inst("b", "memcached", "memcached", "1.0.0"), "memcacheds.cache.io")
	first := withCRDs(inst("a", "memcached", "other", "1.0.0"), "memcacheds.cache.io", "widgets.example.com")
	user := inst("a", "user", "user", "1.0.0")
	c := &Cluster{Installations: []*v1alpha1.ExtensionInstallation{second, user, first}, Extensions: exts}
	names, owners := requiredCRDs(c)
	// Only the required group's CRD, owned by the first installation by
	// name that lists it.
	if !reflect.DeepEqual(names, []string{"memcacheds.cache.io"}) || !reflect.DeepEqual(owners, map[string]string{"memcacheds.cache.io": "other"}) {
		t.Errorf("requiredCRDs = %v, %v", names, owners)
	}
	// No installation asks for an extension that requires an API.
	if names, _ := requiredCRDs(&Cluster{Installations: []*v1alpha1.ExtensionInstallation{first, second}, Extensions: exts}); names != nil {
		t.Errorf("nothing required: requiredCRDs = %v", names)
	}
	// Asked names what the installations ask for once the resolve step ran.
	if names, _ := requiredCRDs(&Cluster{Installations: []*v1alpha1.ExtensionInstallation{first, user}, Extensions: exts, Asked: []string{"other"}}); names != nil {
		t.Errorf("asked for other only: requiredCRDs = %v", names)
	}
	crd := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"group": "cache.io", "names": map[string]any{"kind": "Memcached"},
		"versions": []any{
			map[string]any{"name": "v1", "served": true},
			map[string]any{"name": "v1beta1", "served": false},
			map[string]any{"name": "v2", "served": true},
		},
	}}}
	got := servedAPIs(map[string]*unstructured.Unstructured{"memcacheds.cache.io": crd}, owners)
	// Served versions only, each for the CRD's owner.
	if want := map[string]string{"cache.io/v1/Memcached": "other", "cache.io/v2/Memcached": "other"}; !reflect.DeepEqual(got, want) {
		t.Errorf("servedAPIs = %v, want %v", got, want)
	}
}

// crdSource is a cluster's CRDs, by name, for ProvidedAPIs; err fails
// every read. It records the names it was asked for.
type crdSource struct {
	crds  map[string]*unstructured.Unstructured
	err   error
	asked [][]string
}

func (s *crdSource) CRDs(_ context.Context, names []string) (map[string]*unstructured.Unstructured, error) {
	s.asked = append(s.asked, names)
	if s.err != nil {
		return nil, s.err
	}
	out := map[string]*unstructured.Unstructured{}
	for _, n := range names {
		if crd, ok := s.crds[n]; ok {
			out[n] = crd
		}
	}
	return out, nil
}

func TestProvidedAPIs(t *testing.T) {
	exts := []v1alpha1.Extension{
		extension("user", v1alpha1.ExtensionVersion{Version: "1.0.0", Operator: &v1alpha1.OperatorInfo{RequiredAPIs: []string{"cache.io/v1/Memcached"}}}),
		extension("memcached", version("1.0.0")),
	}
	provider := inst("a", "memcached", "memcached", "1.0.0")
	provider.Status.Inventory = []v1alpha1.ObjectReference{{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "memcacheds.cache.io"}}
	crd := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"group": "cache.io", "names": map[string]any{"kind": "Memcached"},
		"versions": []any{map[string]any{"name": "v1", "served": true}},
	}}}
	src := &crdSource{crds: map[string]*unstructured.Unstructured{"memcacheds.cache.io": crd}}
	c := &Cluster{Installations: []*v1alpha1.ExtensionInstallation{provider, inst("a", "user", "user", "")}, Extensions: exts}
	got, err := ProvidedAPIs(t.Context(), src, c)
	if err != nil || !reflect.DeepEqual(got, map[string]string{"cache.io/v1/Memcached": "memcached"}) {
		t.Errorf("ProvidedAPIs = %v, %v", got, err)
	}
	// Nothing requires an API: nothing is read.
	src.asked = nil
	alone := &Cluster{Installations: []*v1alpha1.ExtensionInstallation{provider}, Extensions: exts}
	if got, err := ProvidedAPIs(t.Context(), src, alone); got != nil || err != nil || src.asked != nil {
		t.Errorf("nothing required: ProvidedAPIs = %v, %v, read %v", got, err, src.asked)
	}
	// The cluster's error is returned as it is, for a retry.
	src.err = errors.New("connection refused")
	if _, err := ProvidedAPIs(t.Context(), src, c); !errors.Is(err, src.err) {
		t.Errorf("a failed read: %v", err)
	}
}
