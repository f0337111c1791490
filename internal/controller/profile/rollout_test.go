package profile_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/localcluster"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// history is what a watch of the hub's installations saw: when each
// cluster's installation was given a version, and when it was Ready with
// it. It observes; it decides nothing.
type history struct {
	mu sync.Mutex
	// changed[cluster][version] and ready[cluster][version] are the
	// first times seen.
	changed, ready map[string]map[string]time.Time
	// busy is the most clusters seen changed and not Ready at once.
	busy, maxBusy int
	inFlight      map[string]bool
}

func watchHistory(t *testing.T, ns string) *history {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := wc.Watch(ctx, &v1alpha1.ExtensionInstallationList{}, client.InNamespace(ns))
	must(t, err)
	h := &history{changed: map[string]map[string]time.Time{}, ready: map[string]map[string]time.Time{}, inFlight: map[string]bool{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			inst, ok := ev.Object.(*v1alpha1.ExtensionInstallation)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			h.see(inst, time.Now())
		}
	}()
	return h
}

func (h *history) see(inst *v1alpha1.ExtensionInstallation, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, v := inst.Spec.Cluster, inst.Spec.Version
	if h.changed[c] == nil {
		h.changed[c], h.ready[c] = map[string]time.Time{}, map[string]time.Time{}
	}
	if _, ok := h.changed[c][v]; !ok {
		h.changed[c][v] = now
	}
	ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	isReady := ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == inst.Generation && inst.Status.InstalledVersion == v
	if isReady {
		if _, ok := h.ready[c][v]; !ok {
			h.ready[c][v] = now
		}
	}
	h.inFlight[c] = !isReady
	n := 0
	for _, busy := range h.inFlight {
		if busy {
			n++
		}
	}
	h.maxBusy = max(h.maxBusy, n)
}

// waves orders the clusters that were given version by when.
func (h *history) waves(version string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for c, vs := range h.changed {
		if _, ok := vs[version]; ok {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return h.changed[out[i]][version].Before(h.changed[out[j]][version]) })
	return out
}

func (h *history) at(m map[string]map[string]time.Time, cluster, version string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return m[cluster][version]
}

func (h *history) resetBusy() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.maxBusy = 0
}

// rolloutFleet registers n ManagedClusters r00… labelled env=prod that
// share one member API server, as the fleet simulation does; the charts
// name their objects after the release, which is per cluster.
func rolloutFleet(t *testing.T, ns string, n int, charts ...helmrepo.Chart) []string {
	t.Helper()
	names, _, _ := rolloutFleetWith(t, ns, n, charts...)
	return names
}

// rolloutFleetWith is rolloutFleet, also returning the chart repository
// (its catalog syncs every two seconds) and the member's kubeconfig.
func rolloutFleetWith(t *testing.T, ns string, n int, charts ...helmrepo.Chart) ([]string, *helmrepo.Server, []byte) {
	t.Helper()
	ctx := context.Background()
	repo := helmrepo.NewServer(t, charts...)
	member := testenv.Start(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, member.WriteKubeconfig(path))
	kubeconfig, err := os.ReadFile(path)
	must(t, err)
	must(t, member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "member"}, Data: map[string][]byte{"kubeconfig": kubeconfig}},
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.CatalogSpec{Interval: metav1.Duration{Duration: 2 * time.Second},
			Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}},
	}
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%02d", ns, i)
		names = append(names, name)
		objs = append(objs, &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": ns}},
			Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: ns, Name: "member", Key: "kubeconfig"}}})
	}
	for _, o := range objs {
		must(t, env.Client.Create(ctx, o))
	}
	return names, repo, kubeconfig
}

func configMapChart(name, version string) helmrepo.Chart {
	return helmrepo.Chart{Name: name, Version: version, Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {v: {{ .Chart.Version | quote }}}\n"}}
}

// brokenChart renders a Deployment of one replica: no controller runs in
// the test API server, so it never becomes Available.
func brokenChart(name, version string) helmrepo.Chart {
	c := replicasChart(name, version)
	c.Files["values.yaml"] = "replicas: 1\n"
	return c
}

// awaitCatalog waits until the catalog offers n versions of ext: a profile
// made before would first make a revision that resolved nothing.
func awaitCatalog(t *testing.T, ext string, n int) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func() error {
		e := &v1alpha1.Extension{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: ext}, e); err != nil || len(e.Spec.Versions) != n {
			return fmt.Errorf("extension %s: %d versions (%v), want %d", ext, len(e.Spec.Versions), err, n)
		}
		return nil
	})
}

func getProfile(t *testing.T, name string) *v1alpha1.ExtensionProfile {
	t.Helper()
	p := &v1alpha1.ExtensionProfile{}
	must(t, env.Client.Get(context.Background(), client.ObjectKey{Name: name}, p))
	return p
}

func awaitRollout(t *testing.T, name string, revision int64, phase v1alpha1.RolloutPhase) *v1alpha1.ExtensionProfile {
	t.Helper()
	var p *v1alpha1.ExtensionProfile
	testenv.Eventually(t, 3*time.Minute, func() error {
		p = getProfile(t, name)
		ro := p.Status.Rollout
		if ro == nil || ro.Revision != revision || ro.Phase != phase {
			return fmt.Errorf("rollout %+v, want revision %d %s", ro, revision, phase)
		}
		return nil
	})
	return p
}

func setProfileVersion(t *testing.T, name, version string) {
	t.Helper()
	p := getProfile(t, name)
	patch := client.MergeFrom(p.DeepCopy())
	p.Spec.Extensions[0].Version = version
	must(t, env.Client.Patch(context.Background(), p, patch))
}

// TestRolloutInSteps rolls a version over twelve clusters canary first,
// then two, then the rest, never more than three changing at once; then
// a version that never becomes healthy halts on the canary, which is
// rolled back while no other cluster is touched.
func TestRolloutInSteps(t *testing.T) {
	const ns = "waves"
	clusters := rolloutFleet(t, ns, 12, configMapChart("w-app", "1.0.0"), configMapChart("w-app", "1.1.0"), brokenChart("w-app", "2.0.0"))
	awaitCatalog(t, "w-app", 3)
	h := watchHistory(t, ns)
	one, pct, three := intstr.FromInt32(1), intstr.FromString("10%"), intstr.FromInt32(3)
	p := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "waves"}, Spec: v1alpha1.ExtensionProfileSpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": ns}},
		Namespace:       ns,
		Extensions:      []v1alpha1.ProfileExtension{{Name: "w-app", Version: "1.0.0", Mode: v1alpha1.ProfileModeEnforced}},
		Rollout: &v1alpha1.RolloutStrategy{MaxConcurrent: &three, Steps: []v1alpha1.RolloutStep{
			{Name: "canary", Clusters: &one, Timeout: &metav1.Duration{Duration: 20 * time.Second}},
			{Name: "ten", Clusters: &pct},
		}},
	}}
	must(t, env.Client.Create(context.Background(), p))
	awaitRollout(t, "waves", 1, v1alpha1.RolloutComplete)

	// Revision 2: canary → 10 % (two of eleven, rounded up) → rest.
	h.resetBusy()
	setProfileVersion(t, "waves", "1.1.0")
	done := awaitRollout(t, "waves", 2, v1alpha1.RolloutComplete)
	if c := done.Status.Rollout.Counts; c.Done != 12 || c.Failed != 0 {
		t.Fatalf("counts %+v", c)
	}
	order := h.waves("1.1.0")
	if len(order) != 12 {
		t.Fatalf("%d clusters got 1.1.0: %v", len(order), order)
	}
	readyBy := func(cs []string) time.Time {
		var last time.Time
		for _, c := range cs {
			r := h.at(h.ready, c, "1.1.0")
			if r.IsZero() {
				t.Fatalf("%s never seen Ready with 1.1.0", c)
			}
			last = maxTime(last, r)
		}
		return last
	}
	for _, wave := range []struct {
		name          string
		before, after []string
	}{
		{"ten after canary", order[:1], order[1:3]},
		{"rest after ten", order[1:3], order[3:]},
	} {
		end := readyBy(wave.before)
		for _, c := range wave.after {
			if at := h.at(h.changed, c, "1.1.0"); at.Before(end) {
				t.Errorf("%s: %s changed at %s, before the earlier step was Ready at %s", wave.name, c, at.Format(time.StampMilli), end.Format(time.StampMilli))
			}
		}
	}
	if h.maxBusy > 3 {
		t.Errorf("%d clusters changing at once, maxConcurrent is 3", h.maxBusy)
	}

	// Revision 3 never becomes healthy: the canary fails its step, the
	// rollout halts and returns it to 1.1.0; nobody else changes.
	setProfileVersion(t, "waves", "2.0.0")
	halted := awaitRollout(t, "waves", 3, v1alpha1.RolloutRolledBack)
	if got := h.waves("2.0.0"); len(got) != 1 || got[0] != order[0] {
		t.Fatalf("2.0.0 reached %v, want only the canary %s", got, order[0])
	}
	ro := halted.Status.Rollout
	if ro.Counts.RolledBack != 1 || len(ro.Failures) != 0 && ro.Failures[0].Cluster != order[0] ||
		!meta.IsStatusConditionTrue(halted.Status.Conditions, v1alpha1.ConditionHalted) {
		t.Fatalf("rollout %+v, conditions %+v", ro, halted.Status.Conditions)
	}
	awaitReady(t, ns, "w-app-"+order[0], "1.1.0")
	for _, c := range clusters {
		inst := &v1alpha1.ExtensionInstallation{}
		must(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "w-app-" + c}, inst))
		if inst.Spec.Version != "1.1.0" || inst.Labels[v1alpha1.LabelProfileRevision] != "2" {
			t.Errorf("%s: version %s at revision %s after the rollback, want 1.1.0 at 2", c, inst.Spec.Version, inst.Labels[v1alpha1.LabelProfileRevision])
		}
	}
	// The halted revision stays halted: nothing more changes.
	time.Sleep(3 * time.Second)
	if got := h.waves("2.0.0"); len(got) != 1 {
		t.Fatalf("2.0.0 reached %v after the halt", got)
	}
	if !slices.Contains(clusters, order[0]) {
		t.Fatalf("canary %s is not one of the fleet", order[0])
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TestRolloutValidation: the API server refuses a step count, budget or
// concurrency that is neither a count nor a percentage up to 100 %, and
// duplicate step names, naming the field.
func TestRolloutValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*v1alpha1.RolloutStrategy)
		refused string // a part of the message; "" for accepted
	}{
		// A count and a percentage are both fine.
		{"count and percent", func(s *v1alpha1.RolloutStrategy) {
			s.MaxConcurrent = ptrTo(intstr.FromInt32(50))
			s.Steps[0].Clusters = ptrTo(intstr.FromString("10%"))
		}, ""},
		// Past 100 % is refused.
		{"over 100%", func(s *v1alpha1.RolloutStrategy) { s.Steps[0].MaxUnavailable = ptrTo(intstr.FromString("150%")) }, "should match"},
		// A word is neither.
		{"word", func(s *v1alpha1.RolloutStrategy) { s.Steps[0].Clusters = ptrTo(intstr.FromString("half")) }, "should match"},
		// A negative count is refused.
		{"negative", func(s *v1alpha1.RolloutStrategy) { s.MaxConcurrent = ptrTo(intstr.FromInt32(-1)) }, "a count (0 or more)"},
		// Step names are unique.
		{"duplicate step", func(s *v1alpha1.RolloutStrategy) { s.Steps = append(s.Steps, s.Steps[0]) }, "must be unique"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{{Name: "canary"}}}
			tc.mutate(s)
			p := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "valid-" + strings.ReplaceAll(tc.name, " ", "-")},
				Spec: v1alpha1.ExtensionProfileSpec{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"none": "x"}},
					Extensions: []v1alpha1.ProfileExtension{{Name: "nothing"}}, Rollout: s}}
			p.Name = strings.ReplaceAll(p.Name, "%", "")
			err := env.Client.Create(context.Background(), p, client.DryRunAll)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("err %v, want it to say %q", err, tc.refused)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestRolloutCatalogVersionAndUnreachable: a new catalog version within
// the profile's range becomes a revision that rolls out canary first; an
// unreachable cluster is skipped without holding the others back, and
// gets the revision once it answers again.
func TestRolloutCatalogVersionAndUnreachable(t *testing.T) {
	ctx := context.Background()
	const ns = "catalogwave"
	_, repo, kubeconfig := rolloutFleetWith(t, ns, 5, configMapChart("cw-app", "1.0.0"))
	// One more cluster whose kubeconfig points at a port nobody listens on.
	offline := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "offline"},
		Data: map[string][]byte{"kubeconfig": []byte(strings.ReplaceAll(string(kubeconfig), "server: https://127.0.0.1:", "server: https://127.0.0.1:1#"))}}
	must(t, env.Client.Create(ctx, offline))
	must(t, env.Client.Create(ctx, &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: ns + "-offline", Labels: map[string]string{"fleet": ns}},
		Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: ns, Name: "offline", Key: "kubeconfig"}}}))
	testenv.Eventually(t, time.Minute, func() error {
		mc := &v1alpha1.ManagedCluster{}
		must(t, env.Client.Get(ctx, client.ObjectKey{Name: ns + "-offline"}, mc))
		if !meta.IsStatusConditionFalse(mc.Status.Conditions, v1alpha1.ConditionReachable) {
			return fmt.Errorf("offline cluster: %+v", mc.Status.Conditions)
		}
		return nil
	})
	h := watchHistory(t, ns)
	awaitCatalog(t, "cw-app", 1)
	one := intstr.FromInt32(1)
	must(t, env.Client.Create(ctx, &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.ExtensionProfileSpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": ns}},
		Namespace:       ns,
		Extensions:      []v1alpha1.ProfileExtension{{Name: "cw-app", Version: "1.x", Mode: v1alpha1.ProfileModeEnforced}},
		Rollout:         &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{{Name: "canary", Clusters: &one}}},
	}}))
	p := awaitRollout(t, ns, 1, v1alpha1.RolloutComplete)
	if c := p.Status.Rollout.Counts; c.Done != 5 || c.Skipped != 1 {
		t.Fatalf("revision 1: counts %+v, want 5 done and the offline cluster skipped", c)
	}

	// The catalog offers 1.1.0, within 1.x: revision 2 rolls it out.
	repo.Add(t, configMapChart("cw-app", "1.1.0"))
	p = awaitRollout(t, ns, 2, v1alpha1.RolloutComplete)
	if c := p.Status.Rollout.Counts; c.Done != 5 || c.Skipped != 1 {
		t.Fatalf("revision 2: counts %+v", c)
	}
	order := h.waves("1.1.0")
	if len(order) != 5 {
		t.Fatalf("1.1.0 reached %v, want the five reachable clusters", order)
	}
	canaryReady := h.at(h.ready, order[0], "1.1.0")
	for _, c := range order[1:] {
		if at := h.at(h.changed, c, "1.1.0"); at.Before(canaryReady) {
			t.Errorf("%s changed at %s, before the canary %s was Ready at %s", c, at.Format(time.StampMilli), order[0], canaryReady.Format(time.StampMilli))
		}
	}

	// The offline cluster answers again: it catches up.
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(offline), offline))
	offline.Data["kubeconfig"] = kubeconfig
	must(t, env.Client.Update(ctx, offline))
	awaitReady(t, ns, "cw-app-"+ns+"-offline", "1.1.0")
	testenv.Eventually(t, time.Minute, func() error {
		p := getProfile(t, ns)
		if c := p.Status.Rollout.Counts; c.Done != 6 || c.Skipped != 0 {
			return fmt.Errorf("counts %+v", c)
		}
		return nil
	})
}

// impersonate returns a client acting as user, bound to ClusterRole role
// cluster-wide.
func impersonate(t *testing.T, user, role string) client.Client {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-" + user + "-" + role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	must(t, client.IgnoreAlreadyExists(env.Client.Create(context.Background(), b)))
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	must(t, err)
	return c
}

// TestRolloutWindowAndApproval: a step that requires approval waits until
// someone other than who changed the profile approves it (the author's
// own approval does not count); a cluster outside its maintenance window
// waits, named with when it opens, and is changed once the window opens.
func TestRolloutWindowAndApproval(t *testing.T) {
	ctx := context.Background()
	const ns = "gated"
	clusters := rolloutFleet(t, ns, 3, configMapChart("g-app", "1.0.0"), configMapChart("g-app", "1.1.0"))
	alice, bob := impersonate(t, "alice", "cluster-admin"), impersonate(t, "bob", "cluster-admin")
	awaitCatalog(t, "g-app", 2)
	one := intstr.FromInt32(1)
	p := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.ExtensionProfileSpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": ns}},
		Namespace:       ns,
		Extensions:      []v1alpha1.ProfileExtension{{Name: "g-app", Version: "1.0.0", Mode: v1alpha1.ProfileModeEnforced}},
		Rollout: &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{
			{Name: "canary", Clusters: &one},
			{Name: "rest", RequireApproval: true},
		}},
	}}
	must(t, alice.Create(ctx, p))
	p = awaitRollout(t, ns, 1, v1alpha1.RolloutWaitingForApproval)
	if p.Status.Rollout.StepName != "rest" || p.Status.Rollout.Counts.Done != 1 || p.Status.Rollout.Counts.WaitingForApproval != 2 {
		t.Fatalf("rollout %+v", p.Status.Rollout)
	}
	approval := func(c client.Client, name string) {
		t.Helper()
		must(t, c.Create(ctx, &v1alpha1.Approval{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.ApprovalSpec{Profile: ns, Revision: 1, Step: "rest"}}))
	}
	// alice changed the profile: her approval does not count, and the
	// status says why.
	approval(alice, "by-alice")
	testenv.Eventually(t, time.Minute, func() error {
		ro := getProfile(t, ns).Status.Rollout
		if ro.Phase != v1alpha1.RolloutWaitingForApproval || !strings.Contains(ro.Message, "alice") {
			return fmt.Errorf("rollout %s: %s", ro.Phase, ro.Message)
		}
		return nil
	})
	approval(bob, "by-bob")
	awaitRollout(t, ns, 1, v1alpha1.RolloutComplete)

	// The last cluster's window opens in one to two minutes (cron counts
	// minutes): revision 2 reaches the others and waits for it.
	opens := time.Now().UTC().Truncate(time.Minute).Add(2 * time.Minute)
	last := clusters[2]
	mc := &v1alpha1.ManagedCluster{}
	must(t, env.Client.Get(ctx, client.ObjectKey{Name: last}, mc))
	// A merge patch, not an update: the profile writes the cluster's
	// annotations (its notes) while the rollout moves.
	windows := client.MergeFrom(mc.DeepCopy())
	mc.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Schedule: fmt.Sprintf("%d %d * * *", opens.Minute(), opens.Hour()),
		Duration: metav1.Duration{Duration: 10 * time.Minute}}}
	must(t, env.Client.Patch(ctx, mc, windows))
	// A step of everyone, approved ahead by bob: the windows decide.
	p = getProfile(t, ns)
	edit := client.MergeFrom(p.DeepCopy())
	p.Spec.Rollout.Steps = []v1alpha1.RolloutStep{{Name: "all"}}
	p.Spec.Extensions[0].Version = "1.1.0"
	must(t, alice.Patch(ctx, p, edit)) // the profile's status moves meanwhile
	testenv.Eventually(t, time.Until(opens), func() error {
		ro := getProfile(t, ns).Status.Rollout
		if ro.Revision != 2 || ro.Counts.WaitingForWindow != 1 || ro.Counts.Done != 2 || len(ro.Waiting) != 1 ||
			ro.Waiting[0].Cluster != last || ro.Waiting[0].Until == nil || !ro.Waiting[0].Until.Time.Equal(opens) {
			return fmt.Errorf("rollout %+v", ro)
		}
		return nil
	})
	if time.Now().After(opens) {
		t.Fatalf("the rollout was seen waiting only after the window opened at %s", opens)
	}
	inst := &v1alpha1.ExtensionInstallation{}
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g-app-" + last}, inst))
	if inst.Spec.Version != "1.0.0" {
		t.Fatalf("%s changed to %s before its window opened at %s", last, inst.Spec.Version, opens)
	}
	done := awaitRollout(t, ns, 2, v1alpha1.RolloutComplete)
	awaitReady(t, ns, "g-app-"+last, "1.1.0")
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "g-app-" + last}, inst))
	at, err := time.Parse(time.RFC3339, inst.Annotations[v1alpha1.AnnotationProfileRevisionAt])
	if err != nil || at.Before(opens) {
		t.Fatalf("%s changed at %s (%v), before its window opened at %s", last, at, err, opens)
	}
	if done.Status.Rollout.Counts.Done != 3 {
		t.Fatalf("counts %+v", done.Status.Rollout.Counts)
	}
}

// replicasChart renders a Deployment of .Values.replicas (0 by default):
// with 0 it is Available at once, with 1 never (no controller runs in
// the test API server).
func replicasChart(name, version string) helmrepo.Chart {
	return helmrepo.Chart{Name: name, Version: version, Files: map[string]string{
		"values.yaml": "replicas: 0\n",
		"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec: {containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]}
`}}
}

// TestRolloutBudget: a step whose budget is one failure goes on past one
// failed cluster and halts at the second. The step "wave" takes the three
// clusters labelled wave=one, with maxUnavailable 1; each cluster's
// replicas come from its labels, so a version fails exactly where the
// test says. 2.0.0 fails on one wave cluster: the rollout completes, the
// rest get it too. 2.1.0 fails on two: the rollout halts in the wave,
// its clusters go back to 2.0.0, and the rest never see 2.1.0.
func TestRolloutBudget(t *testing.T) {
	const ns = "budget"
	clusters := rolloutFleet(t, ns, 6, configMapChart("b-app", "1.0.0"), replicasChart("b-app", "2.0.0"), replicasChart("b-app", "2.1.0"))
	awaitCatalog(t, "b-app", 3)
	// wave=one on the first three; failA on one of them, failB on two.
	labels := map[string]map[string]string{
		clusters[0]: {"wave": "one", "failA": "1", "failB": "1"},
		clusters[1]: {"wave": "one", "failA": "0", "failB": "1"},
		clusters[2]: {"wave": "one", "failA": "0", "failB": "0"},
	}
	for _, c := range clusters[3:] {
		labels[c] = map[string]string{"failA": "0", "failB": "0"}
	}
	for c, l := range labels {
		mc := &v1alpha1.ManagedCluster{}
		must(t, env.Client.Get(context.Background(), client.ObjectKey{Name: c}, mc))
		patch := client.MergeFrom(mc.DeepCopy())
		for k, v := range l {
			mc.Labels[k] = v
		}
		must(t, env.Client.Patch(context.Background(), mc, patch))
	}
	h := watchHistory(t, ns)
	one := intstr.FromInt32(1)
	stepTimeout := &metav1.Duration{Duration: 10 * time.Second}
	p := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "budget"}, Spec: v1alpha1.ExtensionProfileSpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": ns}},
		Namespace:       ns,
		Extensions:      []v1alpha1.ProfileExtension{{Name: "b-app", Version: "1.0.0", Mode: v1alpha1.ProfileModeEnforced}},
		Rollout: &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{
			{Name: "wave", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"wave": "one"}}, MaxUnavailable: &one, Timeout: stepTimeout},
		}},
	}}
	must(t, env.Client.Create(context.Background(), p))
	awaitRollout(t, "budget", 1, v1alpha1.RolloutComplete)

	setVersionAndReplicas := func(version, label string) {
		t.Helper()
		p := getProfile(t, "budget")
		patch := client.MergeFrom(p.DeepCopy())
		p.Spec.Extensions[0].Version = version
		p.Spec.Extensions[0].Values = &apiextensionsv1.JSON{Raw: []byte(`{"replicas":"{{ .cluster.labels.` + label + ` }}"}`)}
		must(t, env.Client.Patch(context.Background(), p, patch))
	}

	// k = 1 failure: within the budget; the rollout goes on and completes.
	setVersionAndReplicas("2.0.0", "failA")
	done := awaitRollout(t, "budget", 2, v1alpha1.RolloutComplete)
	if c := done.Status.Rollout.Counts; c.Failed != 1 || c.Done != 5 {
		t.Fatalf("revision 2: counts %+v, want 1 failed and 5 done", c)
	}
	if f := done.Status.Rollout.Failures; len(f) != 1 || f[0].Cluster != clusters[0] || f[0].Step != "wave" {
		t.Fatalf("revision 2: failures %+v, want %s in step wave", f, clusters[0])
	}
	if got := h.waves("2.0.0"); len(got) != 6 {
		t.Fatalf("2.0.0 reached %v, want every cluster", got)
	}

	// k+1 = 2 failures: past the budget; the rollout halts in the wave and
	// rolls it back; the rest never change.
	setVersionAndReplicas("2.1.0", "failB")
	halted := awaitRollout(t, "budget", 3, v1alpha1.RolloutRolledBack)
	ro := halted.Status.Rollout
	if ro.StepName != "wave" || !strings.Contains(ro.HaltReason, "2 failed clusters pass its budget of 1") {
		t.Fatalf("revision 3 halted in %q: %s", ro.StepName, ro.HaltReason)
	}
	got := h.waves("2.1.0")
	slices.Sort(got)
	if want := clusters[:3]; !slices.Equal(got, want) {
		t.Fatalf("2.1.0 reached %v, want only the wave %v", got, want)
	}
	for _, c := range clusters {
		inst := &v1alpha1.ExtensionInstallation{}
		must(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "b-app-" + c}, inst))
		if inst.Spec.Version != "2.0.0" || inst.Labels[v1alpha1.LabelProfileRevision] != "2" {
			t.Errorf("%s: version %s at revision %s after the rollback, want 2.0.0 at 2", c, inst.Spec.Version, inst.Labels[v1alpha1.LabelProfileRevision])
		}
	}
	awaitReady(t, ns, "b-app-"+clusters[1], "2.0.0")
}

// TestRolloutHeldBackByKubernetesVersion: a revision's target needs a
// newer Kubernetes than one cluster runs. That cluster gets the highest
// version of the range that fits it, counts as done, and the rollout
// names it with why; the other cluster gets the target.
func TestRolloutHeldBackByKubernetesVersion(t *testing.T) {
	const ns = "heldback"
	ctx := context.Background()
	oldBin := testenv.RequirePreviousBinDir(t)
	oldVersion, err := testenv.PreviousKubeVersion()
	must(t, err)
	old, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), BinDir: oldBin, Log: io.Discard})
	must(t, err)
	t.Cleanup(func() { _ = old.Stop() })
	current := testenv.Start(t)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {v: {{ .Chart.Version | quote }}}\n"
	repo := helmrepo.NewServer(t,
		helmrepo.Chart{Name: "h-app", Version: "1.0.0", KubeVersion: ">=1.30.0-0", Files: map[string]string{"templates/cm.yaml": cm}},
		helmrepo.Chart{Name: "h-app", Version: "2.0.0", KubeVersion: ">=1.37.0-0", Files: map[string]string{"templates/cm.yaml": cm}})
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}},
	}
	for name, write := range map[string]func(string) error{"hb-old": old.WriteKubeconfig, "hb-new": current.WriteKubeconfig} {
		path := filepath.Join(t.TempDir(), "kubeconfig")
		must(t, write(path))
		kubeconfig, err := os.ReadFile(path)
		must(t, err)
		objs = append(objs,
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"kubeconfig": kubeconfig}},
			&v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": ns}},
				Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: ns, Name: name, Key: "kubeconfig"}}})
	}
	for _, o := range objs {
		must(t, env.Client.Create(ctx, o))
	}
	awaitCatalog(t, "h-app", 2)
	// The clusters' Kubernetes versions are known before the profile
	// decides (until then a cluster gets the target, and its
	// installation says whether it fits).
	testenv.Eventually(t, time.Minute, func() error {
		for _, name := range []string{"hb-old", "hb-new"} {
			mc := &v1alpha1.ManagedCluster{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil || mc.Status.KubernetesVersion == "" {
				return fmt.Errorf("%s: Kubernetes version not observed yet (%v)", name, err)
			}
		}
		return nil
	})

	one := intstr.FromInt32(1)
	must(t, env.Client.Create(ctx, &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "heldback"}, Spec: v1alpha1.ExtensionProfileSpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": ns}},
		Namespace:       ns,
		Extensions:      []v1alpha1.ProfileExtension{{Name: "h-app", Version: ">=1.0.0", Mode: v1alpha1.ProfileModeEnforced}},
		Rollout:         &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{{Name: "canary", Clusters: &one}}},
	}}))
	done := awaitRollout(t, "heldback", 1, v1alpha1.RolloutComplete)
	ro := done.Status.Rollout
	if ro.Counts.Done != 2 || ro.HeldBack != 1 || len(ro.HeldBackClusters) != 1 {
		t.Fatalf("rollout %+v, want 2 done, 1 held back", ro)
	}
	held := ro.HeldBackClusters[0]
	mc := &v1alpha1.ManagedCluster{}
	must(t, env.Client.Get(ctx, client.ObjectKey{Name: "hb-old"}, mc))
	if strings.TrimPrefix(mc.Status.KubernetesVersion, "v") != oldVersion {
		t.Fatalf("hb-old runs Kubernetes %s, want %s", mc.Status.KubernetesVersion, oldVersion)
	}
	want := fmt.Sprintf(`h-app 2.0.0 needs Kubernetes >=1.37.0-0 and the cluster runs %s: it gets 1.0.0, the highest version within ">=1.0.0" that fits`, mc.Status.KubernetesVersion)
	if held.Cluster != "hb-old" || held.Extension != "h-app" || held.Reason != v1alpha1.ReasonKubernetesVersion || held.Message != want {
		t.Errorf("held back %+v, want hb-old: %s", held, want)
	}
	awaitReady(t, ns, "h-app-hb-old", "1.0.0")
	awaitReady(t, ns, "h-app-hb-new", "2.0.0")
}
