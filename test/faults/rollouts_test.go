package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// rolloutNS holds the profiles' installations on the hub and what they
// install on the member.
const rolloutNS = "rollouts"

// rolloutExtensions are the extensions of every profile of the rollout
// tests, in the profile's order.
var rolloutExtensions = []string{"roll-a", "roll-b"}

// goodVersions become Ready; badVersion renders a Deployment, which no
// controller of the member API server ever makes Available.
var (
	goodVersions = []string{"1.0.0", "1.1.0", "1.2.0"}
	badVersion   = "2.0.0"
)

// rolloutChart renders one ConfigMap named after the release and the
// version, so that an object a version left behind is seen; badVersion
// renders a Deployment that never becomes Available.
func rolloutChart(name, version string) helmrepo.Chart {
	if version == badVersion {
		return helmrepo.Chart{Name: name, Version: version, Files: map[string]string{"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec: {containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]}
`}}
	}
	return helmrepo.Chart{Name: name, Version: version, Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-{{ .Chart.Version }}\ndata: {v: {{ .Chart.Version | quote }}}\n"}}
}

// rolloutRig is a hub API server the manager runs against, one member API
// server every ManagedCluster of the test points at (as the fleet
// simulation does), a Helm repository with the rollout charts, and a watch
// of the hub's installations.
type rolloutRig struct {
	hub, member client.Client
	mgr         *managerProcess
	watch       *fleetWatch
}

func newRolloutRig(t *testing.T) *rolloutRig {
	t.Helper()
	ctx := context.Background()
	hub, member := testenv.Start(t), testenv.Start(t)
	work := t.TempDir()
	kubeconfig, memberKubeconfig := filepath.Join(work, "kubeconfig"), filepath.Join(work, "member.kubeconfig")
	must(t, hub.WriteKubeconfig(kubeconfig))
	must(t, member.WriteKubeconfig(memberKubeconfig))
	memberConfig, err := os.ReadFile(memberKubeconfig)
	must(t, err)
	var charts []helmrepo.Chart
	for _, ext := range rolloutExtensions {
		for _, v := range append(slices.Clone(goodVersions), badVersion) {
			charts = append(charts, rolloutChart(ext, v))
		}
	}
	repo := helmrepo.NewServer(t, charts...)
	must(t, member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rolloutNS}}))
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rolloutNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: rolloutNS, Name: "member"}, Data: map[string][]byte{"kubeconfig": memberConfig}},
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: rolloutNS}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}},
	} {
		must(t, hub.Client.Create(ctx, o))
	}
	return &rolloutRig{hub: hub.Client, member: member.Client, mgr: newManagerProcess(t, work, kubeconfig), watch: watchFleet(t, hub)}
}

// awaitCatalog waits until the catalog offers every version of the
// rollout extensions: a profile made before would resolve its first
// revision without them, and make another once they come.
func (r *rolloutRig) awaitCatalog(t *testing.T) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, func() error {
		for _, name := range rolloutExtensions {
			ext := &v1alpha1.Extension{}
			if err := r.hub.Get(context.Background(), client.ObjectKey{Name: name}, ext); err != nil {
				return err
			}
			if n := len(ext.Spec.Versions); n != len(goodVersions)+1 {
				return fmt.Errorf("extension %s has %d versions, want %d", name, n, len(goodVersions)+1)
			}
		}
		return nil
	})
}

// fleet registers n ManagedClusters <name>-00… labelled fleet=<name>, and
// a profile <name> that gives them rolloutExtensions at goodVersions[0],
// Enforced, in the steps canary (one cluster) → rest, with onFailure
// Rollback; soak, when set, is the canary's soak time. The manager runs
// and the catalog is read (awaitCatalog).
func (r *rolloutRig) fleet(t *testing.T, name string, n int, soak time.Duration) []string {
	t.Helper()
	ctx := context.Background()
	var clusters []string
	for i := range n {
		c := fmt.Sprintf("%s-%02d", name, i)
		clusters = append(clusters, c)
		must(t, r.hub.Create(ctx, &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: c, Labels: map[string]string{"fleet": name}},
			Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: rolloutNS, Name: "member", Key: "kubeconfig"}}}))
	}
	one := intstr.FromInt32(1)
	canary := v1alpha1.RolloutStep{Name: "canary", Clusters: &one, Timeout: &metav1.Duration{Duration: rolloutStepTimeout}}
	if soak > 0 {
		canary.SoakTime = &metav1.Duration{Duration: soak}
	}
	p := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ExtensionProfileSpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": name}},
		Namespace:       rolloutNS,
		Rollout:         &v1alpha1.RolloutStrategy{Steps: []v1alpha1.RolloutStep{canary}, OnFailure: v1alpha1.RolloutRollback},
	}}
	for _, ext := range rolloutExtensions {
		p.Spec.Extensions = append(p.Spec.Extensions, v1alpha1.ProfileExtension{Name: ext, Version: goodVersions[0], Mode: v1alpha1.ProfileModeEnforced})
	}
	must(t, r.hub.Create(ctx, p))
	return clusters
}

// rolloutStepTimeout is how long a cluster may take to be Ready with a
// revision: a bad revision halts after it; a good one must make it even
// with the manager killed on the way.
const rolloutStepTimeout = 15 * time.Second

func (r *rolloutRig) profile(t *testing.T, name string) *v1alpha1.ExtensionProfile {
	t.Helper()
	p := &v1alpha1.ExtensionProfile{}
	must(t, r.hub.Get(context.Background(), client.ObjectKey{Name: name}, p))
	return p
}

// change sets the profile's extensions to versions (in
// rolloutExtensions' order) and spec.rollout.paused to paused.
func (r *rolloutRig) change(t *testing.T, name string, versions []string, paused bool) {
	t.Helper()
	p := r.profile(t, name)
	patch := client.MergeFrom(p.DeepCopy())
	for i := range p.Spec.Extensions {
		p.Spec.Extensions[i].Version = versions[i]
	}
	p.Spec.Rollout.Paused = paused
	must(t, r.hub.Patch(context.Background(), p, patch))
}

// awaitRollout waits until the profile's rollout of revision is in phase
// and returns the profile.
func (r *rolloutRig) awaitRollout(t *testing.T, name string, revision int64, phase v1alpha1.RolloutPhase) *v1alpha1.ExtensionProfile {
	t.Helper()
	var p *v1alpha1.ExtensionProfile
	testenv.Eventually(t, 3*time.Minute, func() error {
		p = r.profile(t, name)
		ro := p.Status.Rollout
		if ro == nil || ro.Revision != revision || ro.Phase != phase {
			return fmt.Errorf("profile %s: rollout %+v, want revision %d %s", name, ro, revision, phase)
		}
		return nil
	})
	return p
}

// fleetState is how a fleet stands now: its installations by cluster and
// extension, and each cluster's record of the revision it runs (every
// cluster of these tests serves one profile).
type fleetState struct {
	installations map[string]map[string]v1alpha1.ExtensionInstallation
	records       map[string]fleetRecord
}

// fleetRecord is what a test reads of a cluster's record of its profile's
// revision (the annotation revisions.profiles.annex.dev/<profile>).
type fleetRecord struct {
	Revision, Move int64
	// Raw is the annotation's value, "" when there is none.
	Raw string `json:"-"`
}

// recordOf reads mc's record of its profile's revision.
func recordOf(mc *v1alpha1.ManagedCluster) (fleetRecord, error) {
	var rec fleetRecord
	for k, v := range mc.Annotations {
		if !strings.HasPrefix(k, v1alpha1.AnnotationProfileRevisionsPrefix) {
			continue
		}
		if rec.Raw != "" {
			return rec, fmt.Errorf("ManagedCluster %s has two revision records: %s and %s", mc.Name, rec.Raw, v)
		}
		if err := json.Unmarshal([]byte(v), &rec); err != nil {
			return rec, fmt.Errorf("ManagedCluster %s: record %s: %w", mc.Name, v, err)
		}
		rec.Raw = v
	}
	return rec, nil
}

// moveOf is the number of the move that last wrote inst (0: none).
func moveOf(inst *v1alpha1.ExtensionInstallation) int64 {
	n, _ := strconv.ParseInt(inst.Annotations[v1alpha1.AnnotationProfileMove], 10, 64)
	return n
}

// revisionLabel is the revision inst's spec was last written from.
func revisionLabel(inst *v1alpha1.ExtensionInstallation) int64 {
	n, _ := strconv.ParseInt(inst.Labels[v1alpha1.LabelProfileRevision], 10, 64)
	return n
}

func (r *rolloutRig) state(t *testing.T, clusters []string) fleetState {
	t.Helper()
	ctx := context.Background()
	var list v1alpha1.ExtensionInstallationList
	must(t, r.hub.List(ctx, &list, client.InNamespace(rolloutNS)))
	out := fleetState{installations: map[string]map[string]v1alpha1.ExtensionInstallation{}, records: map[string]fleetRecord{}}
	for _, c := range clusters {
		out.installations[c] = map[string]v1alpha1.ExtensionInstallation{}
		mc := &v1alpha1.ManagedCluster{}
		must(t, r.hub.Get(ctx, client.ObjectKey{Name: c}, mc))
		rec, err := recordOf(mc)
		must(t, err)
		out.records[c] = rec
	}
	for _, inst := range list.Items {
		if by, ok := out.installations[inst.Spec.Cluster]; ok {
			by[inst.Spec.Extension] = inst
		}
	}
	return out
}

// pending are the installations of cluster c written by a move its
// record does not count yet: a move cut short.
func (s fleetState) pending(c string) []*v1alpha1.ExtensionInstallation {
	var out []*v1alpha1.ExtensionInstallation
	for _, inst := range s.installations[c] {
		if moveOf(&inst) > s.records[c].Move {
			out = append(out, &inst)
		}
	}
	return out
}

// moved counts the clusters whose move to revision is whole (their record
// says it, and no installation was written by a later move), and those
// half-moved to or from it: some installations written by a move the
// record does not count yet, the record or those installations at
// revision.
func (s fleetState) moved(revision int64) (full, half int) {
	for c := range s.installations {
		pending := s.pending(c)
		atRevision := s.records[c].Raw != "" && s.records[c].Revision == revision
		for _, inst := range pending {
			atRevision = atRevision || revisionLabel(inst) == revision
		}
		switch {
		case atRevision && len(pending) == 0:
			full++
		case atRevision:
			half++
		}
	}
	return full, half
}

// settled reports how the fleet differs from every cluster running
// versions[c] at revisions[c] (in rolloutExtensions' order), Ready, each
// cluster's move whole.
func (s fleetState) settled(revisions map[string]int64, versions map[string][]string) []string {
	var problems []string
	for c, by := range s.installations {
		if len(by) != len(rolloutExtensions) {
			problems = append(problems, fmt.Sprintf("%s has %d installations, want %d", c, len(by), len(rolloutExtensions)))
		}
		if rec := s.records[c]; rec.Raw == "" || rec.Revision != revisions[c] {
			problems = append(problems, fmt.Sprintf("ManagedCluster %s records %q, want revision %d", c, rec.Raw, revisions[c]))
		}
		for _, inst := range s.pending(c) {
			problems = append(problems, fmt.Sprintf("%s was written by move %d, which %s's record (%s) does not count",
				inst.Name, moveOf(inst), c, s.records[c].Raw))
		}
		for i, ext := range rolloutExtensions {
			inst, ok := by[ext]
			if !ok {
				continue
			}
			ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
			if inst.Spec.Version != versions[c][i] || !isReady(&inst) {
				problems = append(problems, fmt.Sprintf("%s: version %s, installed %q, Ready %v; want %s Ready",
					inst.Name, inst.Spec.Version, inst.Status.InstalledVersion, ready, versions[c][i]))
			}
		}
	}
	slices.Sort(problems)
	return problems
}

// isReady reports whether inst is Ready with its current spec's version.
func isReady(inst *v1alpha1.ExtensionInstallation) bool {
	ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == inst.Generation &&
		inst.Status.InstalledVersion == inst.Spec.Version
}

// awaitSettled waits until the fleet runs what settled asks.
func (r *rolloutRig) awaitSettled(t *testing.T, clusters []string, revisions map[string]int64, versions map[string][]string) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, func() error {
		if problems := r.state(t, clusters).settled(revisions, versions); len(problems) > 0 {
			return fmt.Errorf("the fleet has not settled:\n%s", strings.Join(problems, "\n"))
		}
		return nil
	})
}

// checkCounts fails the test unless the rollout's counts add up to the
// clusters the profile selects, n.
func checkCounts(t *testing.T, p *v1alpha1.ExtensionProfile, n int) {
	t.Helper()
	c := p.Status.Rollout.Counts
	sum := c.Pending + c.InProgress + c.WaitingForWindow + c.WaitingForApproval + c.Done + c.Failed + c.Skipped + c.RolledBack
	if int(sum) != n || int(p.Status.MatchingClusters) != n {
		t.Errorf("profile %s: counts %+v add up to %d over %d matching clusters, want %d", p.Name, c, sum, p.Status.MatchingClusters, n)
	}
}

// checkMember fails the test if an object on the member is in no
// installation's inventory, or the other way round.
func (r *rolloutRig) checkMember(t *testing.T) {
	t.Helper()
	if problems := orphansAcross(context.Background(), r.hub, r.member, rolloutNS); len(problems) > 0 {
		t.Fatalf("orphaned or duplicated objects on the member:\n%s", strings.Join(problems, "\n"))
	}
}

// fleetWatch is what watches of the hub's installations and
// ManagedClusters saw: every change of an installation's version,
// revision label or readiness, and of a cluster's record of its profile's
// revision, with its time. It observes; it decides nothing.
type fleetWatch struct {
	mu    sync.Mutex
	seen  []instSeen
	last  map[string]instSeen // by installation name, or cluster name for records
	ended bool                // a watch ended before the test did
}

// instSeen is one state of an installation, or (record set) of a
// cluster's record.
type instSeen struct {
	at                          time.Time
	name, cluster, ext, version string
	revision                    int64
	ready                       bool
	record                      bool
}

func watchFleet(t *testing.T, hub *testenv.Env) *fleetWatch {
	t.Helper()
	wc, err := client.NewWithWatch(hub.Config, client.Options{Scheme: hub.Scheme})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	installations, err := wc.Watch(ctx, &v1alpha1.ExtensionInstallationList{}, client.InNamespace(rolloutNS))
	must(t, err)
	clusters, err := wc.Watch(ctx, &v1alpha1.ManagedClusterList{})
	must(t, err)
	fw := &fleetWatch{last: map[string]instSeen{}}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	follow := func(w watch.Interface) {
		defer wg.Done()
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				continue
			}
			switch o := ev.Object.(type) {
			case *v1alpha1.ExtensionInstallation:
				fw.see(instSeen{at: time.Now(), name: o.Name, cluster: o.Spec.Cluster, ext: o.Spec.Extension, version: o.Spec.Version,
					revision: revisionLabel(o), ready: isReady(o)})
			case *v1alpha1.ManagedCluster:
				if rec, err := recordOf(o); err == nil && rec.Raw != "" {
					fw.see(instSeen{at: time.Now(), name: o.Name, cluster: o.Name, revision: rec.Revision, record: true})
				}
			}
		}
		fw.mu.Lock()
		fw.ended = fw.ended || ctx.Err() == nil
		fw.mu.Unlock()
	}
	wg.Add(2)
	go follow(installations)
	go follow(clusters)
	return fw
}

func (w *fleetWatch) see(s instSeen) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := s.name
	if s.record {
		key = "record/" + s.name
	}
	if last, ok := w.last[key]; ok && last.version == s.version && last.revision == s.revision && last.ready == s.ready {
		return
	}
	w.last[key] = s
	w.seen = append(w.seen, s)
}

// history returns what the watch saw of clusters, in order.
func (w *fleetWatch) history(t *testing.T, clusters []string) []instSeen {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		t.Fatal("a watch of the fleet ended early: the history is incomplete")
	}
	var out []instSeen
	for _, s := range w.seen {
		if slices.Contains(clusters, s.cluster) {
			out = append(out, s)
		}
	}
	return out
}

// canary is the cluster of clusters that got revision 1 first: the
// canary of every revision, as steps take clusters in the same order for
// every revision.
func (w *fleetWatch) canary(t *testing.T, clusters []string) string {
	t.Helper()
	for _, s := range w.history(t, clusters) {
		if !s.record && s.revision == 1 {
			return s.cluster
		}
	}
	t.Fatal("no cluster was seen at revision 1")
	return ""
}

// checkSteps fails the test unless, for every revision the watch saw, no
// cluster but the canary got the revision (an installation written from
// it, or its record) before the canary was Ready with it (its record at
// the revision and every installation Ready), and no cluster but the
// canary ever got badVersion.
func (w *fleetWatch) checkSteps(t *testing.T, clusters []string) {
	t.Helper()
	canary := w.canary(t, clusters)
	first := map[string]map[int64]time.Time{} // cluster → revision → first seen
	readyAt := map[int64]time.Time{}          // revision → the canary first Ready with it
	canaryRecord, canaryReady := int64(0), map[string]bool{}
	for _, s := range w.history(t, clusters) {
		if first[s.cluster] == nil {
			first[s.cluster] = map[int64]time.Time{}
		}
		if _, ok := first[s.cluster][s.revision]; !ok {
			first[s.cluster][s.revision] = s.at
		}
		if s.cluster == canary {
			if s.record {
				canaryRecord = s.revision
			} else {
				canaryReady[s.ext] = s.ready
			}
			all := len(canaryReady) == len(rolloutExtensions)
			for _, ready := range canaryReady {
				all = all && ready
			}
			if _, ok := readyAt[canaryRecord]; all && canaryRecord > 0 && !ok {
				readyAt[canaryRecord] = s.at
			}
		}
		if !s.record && s.cluster != canary && s.version == badVersion {
			t.Errorf("%s got the bad version %s at revision %d; only the canary %s may", s.name, badVersion, s.revision, canary)
		}
	}
	for c, revs := range first {
		if c == canary {
			continue
		}
		for rev, at := range revs {
			if rev == 0 {
				continue
			}
			ready, ok := readyAt[rev]
			switch {
			case !ok:
				t.Errorf("%s got revision %d at %s; the canary %s was never Ready with it", c, rev, at.Format(time.StampMilli), canary)
			case at.Before(ready):
				t.Errorf("%s got revision %d at %s, before the canary %s was Ready with it (at %s)", c, rev,
					at.Format(time.StampMilli), canary, ready.Format(time.StampMilli))
			}
		}
	}
}

// rolloutOps is how many operations TestRolloutCrashesConverge makes:
// few with make test's fixed seed, more with random ones
// (ANNEX_FAULT_ROLLOUT_OPS=n sets it).
func rolloutOps(random bool) int {
	if n, err := strconv.Atoi(os.Getenv("ANNEX_FAULT_ROLLOUT_OPS")); err == nil && n > 0 {
		return n
	}
	if random {
		return 40
	}
	return 10
}

// rolloutKillPoints are the failpoints TestRolloutCrashesConverge arms:
// the rollout's and some of the installations' apply sequence.
var rolloutKillPoints = []string{
	failpoint.RolloutAfterState, failpoint.RolloutAfterFirstMove, failpoint.RolloutDuringRollback,
	failpoint.AfterIntent, failpoint.AfterFirstObject, failpoint.BeforeStatus,
}

// TestRolloutCrashesConverge changes a profile's versions (good ones, and
// one that never becomes healthy and halts its rollout), pauses and
// resumes its rollout, and SIGKILLs the manager at random moments and at
// random failpoints meanwhile. Then it rolls out a last good revision with
// the manager left alone and checks that it completes on every cluster,
// each cluster's installations at one revision, nothing orphaned on the
// member, the counts adding up; and, from the watch, that no revision
// ever reached a cluster before the canary was Ready with it, and the bad
// version no cluster but the canary. ANNEX_FAULTS=random picks a random
// seed (ANNEX_FAULT_SEED=n replays one).
func TestRolloutCrashesConverge(t *testing.T) {
	random := os.Getenv("ANNEX_FAULTS") == "random"
	seed := uint64(20261126)
	if random {
		seed = rand.Uint64()
	}
	if n, err := strconv.ParseUint(os.Getenv("ANNEX_FAULT_SEED"), 10, 64); err == nil {
		seed = n
	}
	ops := rolloutOps(random)
	t.Logf("seed %d, %d operations (reproduce: ANNEX_FAULT_SEED=%d ANNEX_FAULT_ROLLOUT_OPS=%d)", seed, ops, seed, ops)
	rng := rand.New(rand.NewPCG(seed, 1))

	r := newRolloutRig(t)
	const name = "random"
	const n = 5
	r.mgr.start()
	r.awaitCatalog(t)
	clusters := r.fleet(t, name, n, 0)
	r.awaitRollout(t, name, 1, v1alpha1.RolloutComplete)
	r.mgr.kill()
	r.mgr.start(armRollout(rng)...)

	versions, paused := []string{goodVersions[0], goodVersions[0]}, false
	kills, pointKills := 0, 0
	for range ops {
		switch k := rng.IntN(10); {
		case k < 5:
			// A good revision: new versions for both extensions.
			versions = []string{pickOther(rng, goodVersions, versions[0]), pickOther(rng, goodVersions, versions[1])}
		case k < 7:
			// A revision that never becomes healthy: it halts on the
			// canary and rolls back.
			versions = []string{badVersion, pickOther(rng, goodVersions, versions[1])}
		case k < 9:
			paused = !paused
		default:
			// No change: the rollout runs for longer than a step's
			// timeout, long enough for a bad revision to halt.
			time.Sleep(rolloutStepTimeout)
		}
		r.change(t, name, versions, paused)
		time.Sleep(time.Duration(rng.IntN(4000)) * time.Millisecond)
		if ro := r.profile(t, name).Status.Rollout; ro != nil {
			t.Logf("versions %v, paused %v: revision %d %s at step %s", versions, paused, ro.Revision, ro.Phase, ro.StepName)
		}
		switch {
		case isClosed(r.mgr.exited):
			// It killed itself at its armed point.
			r.mgr.cmd = nil
			pointKills++
			r.mgr.start(armRollout(rng)...)
		case rng.IntN(2) == 0:
			r.mgr.kill()
			kills++
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
			r.mgr.start(armRollout(rng)...)
		}
	}
	t.Logf("%d operations, the manager was SIGKILLed %d times at random and killed itself %d times at a failpoint", ops, kills, pointKills)
	r.mgr.kill()

	// A last good revision, with the manager left alone, reaches every
	// cluster.
	last := []string{pickOther(rng, goodVersions, versions[0]), pickOther(rng, goodVersions, versions[1])}
	r.change(t, name, last, false)
	r.mgr.start()
	defer r.mgr.stop()
	var p *v1alpha1.ExtensionProfile
	testenv.Eventually(t, 4*time.Minute, func() error {
		p = r.profile(t, name)
		if ro := p.Status.Rollout; p.Status.ObservedGeneration != p.Generation || ro == nil || ro.Phase != v1alpha1.RolloutComplete {
			return fmt.Errorf("generation %d observed %d, rollout %+v", p.Generation, p.Status.ObservedGeneration, ro)
		}
		return nil
	})
	revision := p.Status.Rollout.Revision
	revisions, want := map[string]int64{}, map[string][]string{}
	for _, c := range clusters {
		revisions[c], want[c] = revision, last
	}
	r.awaitSettled(t, clusters, revisions, want)
	p = r.awaitRollout(t, name, revision, v1alpha1.RolloutComplete)
	if c := p.Status.Rollout.Counts; c.Done != n {
		t.Errorf("counts %+v, want %d done", c, n)
	}
	checkCounts(t, p, n)
	r.checkMember(t)
	r.watch.checkSteps(t, clusters)
}

// armRollout returns, two times in three, the environment that arms a
// random kill point of rolloutKillPoints for one of its first three hits.
func armRollout(rng *rand.Rand) []string {
	if rng.IntN(3) == 0 {
		return nil
	}
	return []string{failpoint.Env(rolloutKillPoints[rng.IntN(len(rolloutKillPoints))], "", "", 1+rng.IntN(3))}
}

// pickOther picks one of choices other than not.
func pickOther(rng *rand.Rand, choices []string, not string) string {
	for {
		if c := choices[rng.IntN(len(choices))]; c != not {
			return c
		}
	}
}
