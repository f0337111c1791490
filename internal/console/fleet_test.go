package console_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// The clusters and installations pages filter the fleet by cluster label
// selector and state, list what needs a person first, count clusters per
// Kubernetes version and shard, and page with links that keep the
// filters. The test runs on an API server of its own, without the
// manager the other console tests share: the clusters' Reachable
// conditions and the installations' Ready are written by hand.
func TestFleetPages(t *testing.T) {
	own := testenv.Start(t)
	ctx := context.Background()
	c := own.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	reachable := func(s metav1.ConditionStatus, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionReachable, Status: s, Reason: "Test", Message: msg, LastTransitionTime: metav1.Now()}}
	}
	for _, mc := range []struct {
		name    string
		labels  map[string]string
		version string
		reach   metav1.ConditionStatus
	}{
		{"c-eu-1", map[string]string{"env": "prod", v1alpha1.LabelShard: "eu"}, "1.35.0", metav1.ConditionTrue},
		{"c-eu-2", map[string]string{"env": "prod", v1alpha1.LabelShard: "eu"}, "1.36.0", metav1.ConditionTrue},
		{"c-us-1", map[string]string{"env": "prod"}, "1.35.0", metav1.ConditionFalse},
		{"c-dev-1", map[string]string{"env": "dev"}, "1.35.0", metav1.ConditionTrue},
	} {
		obj := &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: mc.name, Labels: mc.labels},
			Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Name: "kc", Namespace: "team"}}}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		obj.Status = v1alpha1.ManagedClusterStatus{KubernetesVersion: mc.version, Conditions: reachable(mc.reach, "connection refused")}
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []struct {
		name, cluster string
		ready         metav1.ConditionStatus
	}{
		{"app-eu-1", "c-eu-1", metav1.ConditionTrue},
		{"app-eu-2", "c-eu-2", metav1.ConditionFalse},
	} {
		obj := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: in.name},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: "app", Cluster: in.cluster}}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		obj.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: in.ready, Reason: "Test",
			ObservedGeneration: obj.Generation, LastTransitionTime: metav1.Now()}}
		if in.name == "app-eu-2" {
			obj.Status.CRDChanges = &v1alpha1.CRDChangeReport{Version: "2.0.0", Policy: v1alpha1.CRDPolicyStrict, Outcome: v1alpha1.CRDChangeRefused,
				Findings: []v1alpha1.CRDFinding{{CRD: "widgets.example.com", Version: "v1", Path: ".spec.size", Class: "FieldRemoved",
					Message: "widgets.example.com v1: field .spec.size is removed; stored objects that set it lose it"}}}
		}
		if in.name == "app-eu-1" {
			obj.Status.AdoptedFrom = &v1alpha1.AdoptedFrom{Kind: "HelmRelease", Name: in.name, Namespace: "team", Revision: 3,
				Chart: "app", Version: "1.2.0", At: metav1.Now(), StorageRemoved: true}
		}
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(own.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "fleet-viewer", Groups: []string{"system:masters"}}
	base := serveConsole(t, cfg)

	clusterRow := regexp.MustCompile(`<th scope="row"><a href="/installations\?cluster=([^"]+)">`)
	rows := func(body string) string {
		var names []string
		for _, m := range clusterRow.FindAllStringSubmatch(body, -1) {
			names = append(names, m[1])
		}
		return strings.Join(names, " ")
	}
	// The page lists the clusters as the informers see them; the first
	// request may come before their first list.
	testenv.Eventually(t, 30*time.Second, func() error {
		if _, body := get(t, base, "/clusters"); rows(body) != "c-us-1 c-eu-2 c-dev-1 c-eu-1" {
			return fmt.Errorf("clusters listed: %q", rows(body))
		}
		return nil
	})

	for _, tc := range []struct {
		name, path string
		status     int
		// rows are the clusters listed, in order; want what the page says.
		rows string
		want []string
	}{
		// Every cluster: unreachable first, then the one with an
		// installation not Ready, then the ready ones by name; counts per
		// state, Kubernetes version and shard.
		{"every cluster", "/clusters", http.StatusOK, "c-us-1 c-eu-2 c-dev-1 c-eu-1", []string{
			`<a href="/clusters?state=unreachable">unreachable</a></th><td class="num">1</td>`,
			`<a href="/clusters?state=notready">not ready</a> <span class="muted">(an installation is not Ready)</span></th><td class="num">1</td>`,
			`<a href="/clusters?state=ready">ready</a></th><td class="num">2</td>`,
			`<tr><th scope="row">1.35.0</th><td class="num">3</td></tr><tr><th scope="row">1.36.0</th><td class="num">1</td></tr>`,
			`<tr><th scope="row">default</th><td class="num">2</td></tr><tr><th scope="row">eu</th><td class="num">2</td></tr>`,
			"Clusters 1–4 of 4",
		}},
		// A selector: the summary counts the clusters it picks, and the
		// state links keep it.
		{"selector", "/clusters?selector=env%3Dprod", http.StatusOK, "c-us-1 c-eu-2 c-eu-1", []string{
			`Clusters matching <code>env=prod</code>`, `in all</a></th><td class="num">3</td>`,
			`<a href="/clusters?selector=env%3Dprod&amp;state=notready">not ready</a>`,
		}},
		// A shard by its label, and a state.
		{"shard and state", "/clusters?selector=annex.dev%2Fshard%3Deu&state=ready", http.StatusOK, "c-eu-1", []string{
			"Clusters 1–1 of 1 in state ready",
		}},
		{"unreachable", "/clusters?state=unreachable", http.StatusOK, "c-us-1", []string{"connection refused"}},
		// A selector that does not parse: the page says which parameter
		// and how to write it, with the form to correct it.
		{"invalid selector", "/clusters?selector=env+in+prod", http.StatusBadRequest, "", []string{
			`id="filter-error">selector: &#34;env in prod&#34; is not a label selector`, "write it as kubectl -l takes it",
			`id="f-selector" name="selector" value="env in prod"`,
		}},
		{"invalid state", "/clusters?state=broken", http.StatusBadRequest, "", []string{
			`id="filter-error">state: &#34;broken&#34; is not a cluster state; use unreachable, notready, ready`,
		}},
		{"invalid limit", "/clusters?limit=0", http.StatusBadRequest, "", []string{`limit=&#34;0&#34;: give the number of rows a page shows, from 1 to 500`}},
		{"invalid page", "/clusters?page=x", http.StatusBadRequest, "", []string{`page=&#34;x&#34;: give a page number from 1`}},
		// Pages of two: the next link keeps the filters.
		{"page 1", "/clusters?selector=env&limit=2", http.StatusOK, "c-us-1 c-eu-2", []string{
			"Clusters 1–2 of 4", "page 1 of 2", `<a href="/clusters?limit=2&amp;page=2&amp;selector=env" rel="next">`,
		}},
		{"page 2", "/clusters?selector=env&limit=2&page=2", http.StatusOK, "c-dev-1 c-eu-1", []string{
			"Clusters 3–4 of 4", "page 2 of 2", `<a href="/clusters?limit=2&amp;page=1&amp;selector=env" rel="prev">`,
		}},
		// A page past the last shows the last; a limit above 500 is 500.
		{"past the last page", "/clusters?limit=3&page=9", http.StatusOK, "c-eu-1", []string{"page 2 of 2"}},
		{"limit bounded", "/clusters?limit=100000", http.StatusOK, "c-us-1 c-eu-2 c-dev-1 c-eu-1", []string{`name="limit" value="500"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := get(t, base, tc.path)
			if status != tc.status {
				t.Fatalf("GET %s: status %d, want %d\n%s", tc.path, status, tc.status, body)
			}
			if got := rows(body); got != tc.rows {
				t.Errorf("GET %s: clusters %q, want %q", tc.path, got, tc.rows)
			}
			for _, want := range tc.want {
				if !strings.Contains(body, want) {
					t.Errorf("GET %s lacks %s\n%s", tc.path, want, body)
				}
			}
		})
	}

	installation := regexp.MustCompile(`<th scope="row"><a href="/installations/team/([^"]+)">`)
	installations := func(body string) string {
		var names []string
		for _, m := range installation.FindAllStringSubmatch(body, -1) {
			names = append(names, m[1])
		}
		return strings.Join(names, " ")
	}
	for _, tc := range []struct {
		name, path, installations string
		status                    int
		want                      []string
	}{
		// The selector picks clusters; their installations are listed,
		// the one that is not Ready first.
		{"selector", "/installations?selector=annex.dev%2Fshard%3Deu", "app-eu-2 app-eu-1", http.StatusOK, []string{
			"Installations 1–2 of 2; 1 of the 2 Ready.", `in all</a></th><td class="num">2</td>`,
		}},
		{"no installation", "/installations?selector=env%3Ddev", "", http.StatusOK, []string{"No installation shown."}},
		{"state", "/installations?state=ready", "app-eu-1", http.StatusOK, nil},
		{"not Ready only", "/installations?notready=1", "app-eu-2", http.StatusOK, nil},
		// Pages of installations, the filters kept.
		{"page 1", "/installations?limit=1&q=app", "app-eu-2", http.StatusOK, []string{
			"page 1 of 2", `<a href="/installations?limit=1&amp;page=2&amp;q=app" rel="next">`,
		}},
		{"page 2", "/installations?limit=1&q=app&page=2", "app-eu-1", http.StatusOK, []string{"page 2 of 2"}},
		{"invalid selector", "/installations?selector=%21%21", "", http.StatusBadRequest, []string{`id="filter-error">selector: &#34;!!&#34; is not a label selector`}},
		// An adopted installation says where it came from
		// (status.adoptedFrom), in the list and on its page.
		{"adopted", "/installations?q=app-eu-1", "app-eu-1", http.StatusOK, []string{
			`app-eu-1</a> <span class="muted adopted">adopted from Helm release team/app-eu-1 revision 3 (app 1.2.0)</span>`,
		}},
		{"refused CRD change, its page", "/installations/team/app-eu-2", "", http.StatusOK, []string{
			`<h2 id="crd-heading">CRD changes of 2.0.0</h2>`,
			`Refused under <code>spec.upgrade.crdPolicy: Strict</code>: nothing of 2.0.0 was applied.`,
			`<tr><th scope="row">widgets.example.com</th><td>v1</td><td><code>.spec.size</code></td><td>FieldRemoved</td><td><p class="message">widgets.example.com v1: field .spec.size is removed; stored objects that set it lose it</p></td></tr>`,
		}},
		{"adopted, its page", "/installations/team/app-eu-1", "", http.StatusOK, []string{
			`<dt>Adopted from</dt><dd id="adopted-from">Helm release team/app-eu-1 revision 3 (app 1.2.0), taken over in place as revision 1</dd>`,
		}},
	} {
		t.Run("installations "+tc.name, func(t *testing.T) {
			status, body := get(t, base, tc.path)
			if status != tc.status {
				t.Fatalf("GET %s: status %d, want %d\n%s", tc.path, status, tc.status, body)
			}
			if got := installations(body); got != tc.installations {
				t.Errorf("GET %s: installations %q, want %q", tc.path, got, tc.installations)
			}
			for _, want := range tc.want {
				if !strings.Contains(body, want) {
					t.Errorf("GET %s lacks %s\n%s", tc.path, want, body)
				}
			}
		})
	}
	if _, body := get(t, base, "/installations/team/app-eu-2"); strings.Contains(body, "Adopted from") {
		t.Errorf("an installation that adopted nothing says Adopted from:\n%s", body)
	}
}
