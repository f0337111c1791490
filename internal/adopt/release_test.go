package adopt

import (
	"context"
	"errors"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// helmRelease is a revision as Helm's actions build it.
func helmRelease(name string, revision int, status common.Status) *rspb.Release {
	return &rspb.Release{
		Name: name, Namespace: "team-a", Version: revision,
		Info:     &rspb.Info{Status: status, Description: "Install complete"},
		Chart:    &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "web", Version: "1.2.0", AppVersion: "2.0"}},
		Config:   map[string]any{"replicas": 2, "image": map[string]any{"tag": "v2"}},
		Manifest: "---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n",
		Hooks:    []*rspb.Hook{{Name: "web-test", Kind: "Pod", Manifest: "kind: Pod"}},
	}
}

// Helm's own storage drivers write the objects that DecodeSecret and
// DecodeConfigMap read: the format is Helm's, not a copy of it.
func TestDecodeHelmStorage(t *testing.T) {
	cs := fake.NewClientset()
	secrets := driver.NewSecrets(cs.CoreV1().Secrets("team-a"))
	cms := driver.NewConfigMaps(cs.CoreV1().ConfigMaps("team-a"))
	rel := helmRelease("web", 3, common.StatusDeployed)
	key := StorageName("web", 3)
	if err := secrets.Create(key, rel); err != nil {
		t.Fatal(err)
	}
	if err := cms.Create(key, rel); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sec, err := cs.CoreV1().Secrets("team-a").Get(ctx, key, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps("team-a").Get(ctx, key, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !IsStorage(sec.Name, sec.Labels) || !IsStorage(cm.Name, cm.Labels) {
		t.Errorf("IsStorage: false for Helm's own objects (labels %v)", sec.Labels)
	}
	fromSecret, err := DecodeSecret(sec)
	if err != nil {
		t.Fatal(err)
	}
	fromCM, err := DecodeConfigMap(cm)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		got     *Release
		storage string
	}{{fromSecret, "Secret team-a/sh.helm.release.v1.web.v3"}, {fromCM, "ConfigMap team-a/sh.helm.release.v1.web.v3"}} {
		r := c.got
		if r.Name != "web" || r.Namespace != "team-a" || r.Revision != 3 || r.Status != StatusDeployed ||
			r.Chart != "web" || r.ChartVersion != "1.2.0" || r.AppVersion != "2.0" || r.Hooks != 1 || r.Storage != c.storage || r.StorageNamespace != "team-a" {
			t.Errorf("decoded %+v", r)
		}
		if r.Manifest != rel.Manifest {
			t.Errorf("manifest %q, want %q", r.Manifest, rel.Manifest)
		}
		if r.Values["replicas"] != float64(2) || r.Values["image"].(map[string]any)["tag"] != "v2" {
			t.Errorf("values %v", r.Values)
		}
	}
}

// Refusals name the storage object and what is wrong with it.
func TestDecodeRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		obj  any
		want string
	}{
		// A Secret of another type is not release storage.
		{"wrong type", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "sh.helm.release.v1.x.v1"}, Type: corev1.SecretTypeOpaque},
			`Secret a/sh.helm.release.v1.x.v1: type is "Opaque", not "helm.sh/release.v1"`},
		// No payload.
		{"empty", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c"}},
			`ConfigMap a/c: key "release" is empty`},
		// A payload that is not base64.
		{"not base64", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s"}, Type: SecretType, Data: map[string][]byte{"release": []byte("%%%")}},
			`Secret a/s: key "release": not base64`},
		// base64 of JSON that is no release (uncompressed, as Helm 3.0 wrote).
		{"not a release", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "c"}, Data: map[string]string{"release": "eyJhIjoxfQ=="}},
			`ConfigMap a/c: key "release": not a Helm release: name, version, info or chart.metadata is missing`},
	} {
		var err error
		switch o := c.obj.(type) {
		case *corev1.Secret:
			_, err = DecodeSecret(o)
		case *corev1.ConfigMap:
			_, err = DecodeConfigMap(o)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestDeployed(t *testing.T) {
	rev := func(n int, status string) *Release {
		return &Release{Name: "web", Namespace: "team-a", Revision: n, Status: status, Storage: "Secret team-a/" + StorageName("web", n)}
	}
	for _, c := range []struct {
		name      string
		revisions []*Release
		want      int    // the revision picked, or 0
		err       string // part of the refusal
	}{
		// One revision, deployed.
		{"single", []*Release{rev(1, StatusDeployed)}, 1, ""},
		// The highest deployed revision, whatever the order given.
		{"history", []*Release{rev(2, StatusSuperseded), rev(4, StatusDeployed), rev(1, StatusSuperseded), rev(3, StatusSuperseded)}, 4, ""},
		// A failed upgrade after a deployed revision: the deployed one runs.
		{"failed upgrade", []*Release{rev(1, StatusDeployed), rev(2, StatusFailed)}, 1, ""},
		// An upgrade still pending: refused with both fixes, naming the revision to keep.
		{"pending upgrade", []*Release{rev(1, StatusSuperseded), rev(2, StatusDeployed), rev(3, StatusPendingUpgrade)}, 0,
			"its latest revision 3 is pending-upgrade (Secret team-a/sh.helm.release.v1.web.v3): a helm install, upgrade or rollback is running on it, or stopped half way; " +
				"if none is running any more, either delete the pending revision so that revision 2 is the release again (kubectl delete secret sh.helm.release.v1.web.v3 -n team-a), " +
				"or roll back to it (helm rollback web 2 -n team-a, which applies revision 2 again as revision 4); then adopt again"},
		// A rollback still pending.
		{"pending rollback", []*Release{rev(1, StatusDeployed), rev(2, StatusPendingRollback)}, 0, "helm rollback web 1 -n team-a"},
		// An install still pending: nothing is deployed to go back to.
		{"pending install", []*Release{rev(1, StatusPendingInstall)}, 0,
			"delete the pending revision (kubectl delete secret sh.helm.release.v1.web.v1 -n team-a) and install the chart again with helm"},
		// Nothing deployed: every revision failed.
		{"all failed", []*Release{rev(1, StatusFailed), rev(2, StatusFailed)}, 0, "has no deployed revision (the latest, 2, is failed)"},
		// Uninstalled with --keep-history.
		{"uninstalled", []*Release{rev(1, StatusUninstalled)}, 0, "has no deployed revision"},
	} {
		got, err := Deployed(c.revisions, "secret")
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case got.Revision != c.want:
			t.Errorf("%s: revision %d, want %d", c.name, got.Revision, c.want)
		}
	}
	// A release stored in another namespace than its objects (Flux's
	// storageNamespace): the fix names the storage's namespace.
	elsewhere := []*Release{rev(1, StatusDeployed), rev(2, StatusPendingUpgrade)}
	elsewhere[1].StorageNamespace = "flux-system"
	if _, err := Deployed(elsewhere, "secret"); err == nil || !strings.Contains(err.Error(), "kubectl delete secret sh.helm.release.v1.web.v2 -n flux-system") ||
		!strings.Contains(err.Error(), "helm rollback web 1 -n flux-system") {
		t.Errorf("storage namespace: %v", err)
	}
	// The ConfigMap driver's fix deletes a ConfigMap.
	_, err := Deployed([]*Release{rev(1, StatusDeployed), rev(2, StatusPendingUpgrade)}, "configmap")
	var pending *PendingError
	if !errors.As(err, &pending) || !strings.Contains(pending.Fix(), "kubectl delete configmap sh.helm.release.v1.web.v2 -n team-a") {
		t.Errorf("configmap driver: %v", err)
	}
}

// Decode never panics on outside input.
func FuzzDecode(f *testing.F) {
	cs := fake.NewClientset()
	if err := driver.NewSecrets(cs.CoreV1().Secrets("a")).Create(StorageName("web", 1), helmRelease("web", 1, common.StatusDeployed)); err != nil {
		f.Fatal(err)
	}
	sec, err := cs.CoreV1().Secrets("a").Get(context.Background(), StorageName("web", 1), metav1.GetOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sec.Data["release"])
	f.Add([]byte("eyJhIjoxfQ=="))
	f.Add([]byte("H4sIAAAAAAAA"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		r, err := Decode(payload)
		if err == nil && (r.Name == "" || r.Revision <= 0) {
			t.Errorf("accepted a release without a name or revision: %+v", r)
		}
	})
}
