package resolve

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// A cluster's memo goes once nothing but installations being deleted is
// on it, and stays while one lives there or the cache cannot say.
func TestForgetIfEmpty(t *testing.T) {
	now := metav1.Now()
	live := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	deleting := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Name: "b", DeletionTimestamp: &now}}
	for _, tc := range []struct {
		name  string
		insts []*v1alpha1.ExtensionInstallation
		err   error
		kept  bool
	}{
		{"none left", nil, nil, false},
		{"only one being deleted", []*v1alpha1.ExtensionInstallation{deleting}, nil, false},
		{"one lives there", []*v1alpha1.ExtensionInstallation{deleting, live}, nil, true},
		{"the cache cannot say", nil, errors.New("no index"), true},
	} {
		var memos ClusterMemos
		memo := memos.Of("edge")
		memos.ForgetIfEmpty("edge", func(cluster string) ([]*v1alpha1.ExtensionInstallation, error) {
			if cluster != "edge" {
				t.Fatalf("%s: asked for cluster %q", tc.name, cluster)
			}
			return tc.insts, tc.err
		})
		if kept := memos.Of("edge") == memo; kept != tc.kept {
			t.Errorf("%s: memo kept %v, want %v", tc.name, kept, tc.kept)
		}
	}
}

// Each cluster has a memo of its own, the same one each time.
func TestClusterMemosOf(t *testing.T) {
	var memos ClusterMemos
	hub, edge := memos.Of(""), memos.Of("edge")
	if hub == edge || memos.Of("") != hub || memos.Of("edge") != edge {
		t.Fatalf("Of: want one memo per cluster, the same each time")
	}
}

// The catalog's identity follows every Extension's name and
// resourceVersion, whatever order the cache lists them in.
func TestCatalogOf(t *testing.T) {
	ext := func(name, rv string) v1alpha1.Extension {
		return v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}
	a := CatalogOf([]v1alpha1.Extension{ext("b", "7"), ext("a", "3")})
	if a != "a@3,b@7" {
		t.Fatalf("CatalogOf = %q, want a@3,b@7", a)
	}
	if b := CatalogOf([]v1alpha1.Extension{ext("a", "3"), ext("b", "7")}); b != a {
		t.Errorf("another order: %q, want %q", b, a)
	}
	if c := CatalogOf([]v1alpha1.Extension{ext("a", "4"), ext("b", "7")}); c == a {
		t.Errorf("a changed Extension kept the identity %q", c)
	}
	if got := CatalogOf(nil); got != "" {
		t.Errorf("no Extensions: %q, want empty", got)
	}
}
