package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// The Rollouts pages render a profile's rollout from its status, and
// their buttons change the profile as annexctl rollout does. The test
// runs on an API server of its own, without the manager the other
// console tests share: its profile controller owns status.rollout and
// would replace the status this test writes by hand.
func TestRolloutPages(t *testing.T) {
	own := testenv.Start(t)
	ctx := context.Background()
	c := own.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}); err != nil {
		t.Fatal(err)
	}
	one, half := intstr.FromInt32(1), intstr.FromString("50%")
	p := &v1alpha1.ExtensionProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1alpha1.ExtensionProfileSpec{
			ClusterSelector: &metav1.LabelSelector{}, Namespace: "fleet",
			Extensions: []v1alpha1.ProfileExtension{{Name: "podinfo", Version: "^6"}},
			Rollout: &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{
				{Name: "canary", Clusters: &one}, {Name: "prod", Clusters: &half, RequireApproval: true}}},
		},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status = v1alpha1.ExtensionProfileStatus{ObservedGeneration: p.Generation, Rollout: &v1alpha1.RolloutStatus{
		Strategy: "Steps", Revision: 2, StableRevision: 1, Phase: v1alpha1.RolloutWaitingForApproval, Step: 1, StepName: "prod", Steps: 3,
		Counts:   v1alpha1.RolloutCounts{Pending: 40, WaitingForApproval: 17, WaitingForWindow: 2, Done: 4, Failed: 1},
		Failures: []v1alpha1.RolloutClusterState{{Cluster: "edge-12", Step: "canary", Extension: "podinfo", Reason: "InstallFailed", Message: "0/2 replicas available"}},
		Waiting:  []v1alpha1.RolloutClusterState{{Cluster: "edge-30", Step: "prod", Until: &metav1.Time{Time: time.Date(2026, 3, 1, 22, 0, 0, 0, time.UTC)}}},
		HeldBack: 3,
		HeldBackClusters: []v1alpha1.RolloutClusterState{{Cluster: "edge-7", Extension: "podinfo", Reason: v1alpha1.ReasonKubernetesVersion,
			Message: "podinfo 6.5.0 needs Kubernetes >=1.37.0-0 and the cluster runs 1.36.4"}},
		Message: "step prod waits for an Approval",
	}}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	for n, target := range map[int64]string{1: "6.4.0", 2: "6.5.0"} {
		data, err := json.Marshal(v1alpha1.ProfileRevisionData{Extensions: []v1alpha1.ProfileRevisionExtension{
			{ProfileExtension: v1alpha1.ProfileExtension{Name: "podinfo", Version: "^6"}, Target: target}}})
		if err != nil {
			t.Fatal(err)
		}
		cr := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", GenerateName: "web-", Labels: map[string]string{v1alpha1.LabelProfile: "web"}},
			Revision:   n, Data: runtime.RawExtension{Raw: data},
		}
		if err := c.Create(ctx, cr); err != nil {
			t.Fatal(err)
		}
	}
	flat := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "flat"}, Spec: v1alpha1.ExtensionProfileSpec{
		IncludeHub: true, Namespace: "fleet", Extensions: []v1alpha1.ProfileExtension{{Name: "podinfo"}}}}
	if err := c.Create(ctx, flat); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(own.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "rollout-operator", Groups: []string{"system:masters"}}
	base := serveConsole(t, cfg)
	profile := func() *v1alpha1.ExtensionProfile {
		t.Helper()
		got := &v1alpha1.ExtensionProfile{}
		if err := c.Get(ctx, client.ObjectKey{Name: "web"}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	// The list: one row per profile with its counts.
	status, body := get(t, base, "/rollouts")
	row := regexp.MustCompile(`(?s)<tr id="rollout-web">.*?</tr>`).FindString(body)
	if status != http.StatusOK || !strings.Contains(body, `href="/rollouts" aria-current="page"`) {
		t.Fatalf("GET /rollouts: %d\n%s", status, body)
	}
	for _, want := range []string{`<a href="/rollouts/web">web</a>`, "WaitingForApproval", "2/3 prod",
		`<td class="num">40</td><td class="num">0</td><td class="num">2</td><td class="num">17</td>`, `<td class="num">4</td><td class="num">1</td><td class="num">0</td>`} {
		if !strings.Contains(row, want) {
			t.Errorf("the row of web lacks %q:\n%s", want, row)
		}
	}
	if !strings.Contains(body, `<tr id="rollout-flat">`) || !strings.Contains(body, "no revision yet") {
		t.Errorf("the row of flat is missing or does not say it has no revision:\n%s", body)
	}

	// The profile's page: counts, failures, waits, steps, revisions and
	// the buttons for where it stands.
	status, body = get(t, base, "/rollouts/web")
	if status != http.StatusOK {
		t.Fatalf("GET /rollouts/web: %d\n%s", status, body)
	}
	for _, want := range []string{
		`data-count="waitingForApproval">17<`, `data-count="pending">40<`, `data-count="failed">1<`,
		"edge-12", "InstallFailed", "edge-30", "2026-03-01T22:00:00Z",
		"Held back by their Kubernetes version <span class=\"muted\">(1 of 3 named", "podinfo 6.5.0 needs Kubernetes &gt;=1.37.0-0",
		`aria-current="step" class="current">prod`, "rest <span class=\"muted\">(implicit)</span>",
		`id="approve">Approve step prod of revision 2`, `id="pause">Pause`, `id="undo">Undo to revision 1`,
		"current (WaitingForApproval)", "podinfo@6.4.0", "podinfo@6.5.0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page of web lacks %q", want)
		}
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the page of web")
	}
	token := m[1]
	act := func(action string, form url.Values) string {
		t.Helper()
		form.Set("csrf", token)
		status, location, body := post(t, base, "/rollouts/web/"+action, form, nil)
		if status != http.StatusSeeOther || !strings.HasPrefix(location, "/rollouts/web?flash=") {
			t.Fatalf("POST %s: %d, Location %q\n%s", action, status, location, body)
		}
		_, page := get(t, base, location)
		return page
	}

	// Without the token nothing changes.
	if status, _, _ := post(t, base, "/rollouts/web/pause", url.Values{}, nil); status != http.StatusForbidden || profile().Spec.Rollout.Paused {
		t.Errorf("pause without the CSRF token: %d, paused %v", status, profile().Spec.Rollout.Paused)
	}

	// Approve: the Approval of exactly the step and revision shown.
	page := act("approve", url.Values{"step": {"prod"}, "revision": {"2"}})
	if !strings.Contains(page, "approved as rollout-operator: Approval fleet/web-r2-prod of step prod of revision 2 of profile web") {
		t.Errorf("after approve, the page does not say what was done:\n%s", page)
	}
	a := &v1alpha1.Approval{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "web-r2-prod"}, a); err != nil {
		t.Fatal(err)
	}
	if a.Spec.Profile != "web" || a.Spec.Revision != 2 || a.Spec.Step != "prod" || a.Spec.Approver != "rollout-operator" {
		t.Errorf("Approval: %+v", a.Spec)
	}

	// Pause, then Resume.
	if act("pause", url.Values{}); !profile().Spec.Rollout.Paused {
		t.Error("after pause: not paused")
	}
	// The page shows the change once the informer has seen it.
	testenv.Eventually(t, 10*time.Second, func() error {
		if _, body := get(t, base, "/rollouts/web"); !strings.Contains(body, `id="resume">Resume`) {
			return errors.New("the page of the paused profile has no Resume button")
		}
		return nil
	})
	if act("resume", url.Values{}); profile().Spec.Rollout.Paused {
		t.Error("after resume: still paused")
	}

	// Undo to the revision shown: its extensions, pinned to the target.
	act("undo", url.Values{"to": {"1"}})
	got := profile()
	if len(got.Spec.Extensions) != 1 || got.Spec.Extensions[0].Version != "6.4.0" || got.Annotations[v1alpha1.AnnotationChangeCause] != "annexctl rollout undo to revision 1" {
		t.Errorf("after undo: extensions %+v, annotations %v", got.Spec.Extensions, got.Annotations)
	}

	// A profile without steps: the page says so, and pausing it is
	// refused with the reason.
	_, body = get(t, base, "/rollouts/flat")
	if !strings.Contains(body, "rolls out every change to all its clusters at once") || strings.Contains(body, `id="pause"`) {
		t.Errorf("the page of flat:\n%s", body)
	}
	status, location, _ := post(t, base, "/rollouts/flat/pause", url.Values{"csrf": {token}}, nil)
	if _, page := get(t, base, location); status != http.StatusSeeOther || !strings.Contains(page, "Not done: profile flat has no spec.rollout") {
		t.Errorf("pause of flat: %d, page:\n%s", status, page)
	}
	if status, _ := get(t, base, "/rollouts/nope"); status != http.StatusNotFound {
		t.Errorf("GET /rollouts/nope: %d, want 404", status)
	}
}
