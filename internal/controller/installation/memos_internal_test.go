package installation

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
		var memos clusterMemos
		memo := memos.of("edge")
		memos.forgetIfEmpty("edge", func(cluster string) ([]*v1alpha1.ExtensionInstallation, error) {
			if cluster != "edge" {
				t.Fatalf("%s: asked for cluster %q", tc.name, cluster)
			}
			return tc.insts, tc.err
		})
		if kept := memos.of("edge") == memo; kept != tc.kept {
			t.Errorf("%s: memo kept %v, want %v", tc.name, kept, tc.kept)
		}
	}
}
