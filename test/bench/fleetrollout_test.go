package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// The versions of extension 0 the rollout phases move to: two healthy
// ones, then one that never becomes healthy.
const (
	rolloutVersion     = "1.2.0"
	rolloutMC50Version = "1.3.0"
	brokenVersion      = "2.0.0"
)

// fleetRolloutCharts are the chart versions of ext the rollout phases
// need, of chart (fleetChart or fleetLargeChart): rolloutVersion and
// rolloutMC50Version render it, and
// brokenVersion scales its Deployment to one replica, which never
// becomes Available because no controller runs on the member API servers.
func fleetRolloutCharts(ext string, chart func(name, version string) helmrepo.Chart) []helmrepo.Chart {
	broken := chart(ext, brokenVersion)
	broken.Files["templates/deployment.yaml"] = strings.Replace(broken.Files["templates/deployment.yaml"], "replicas: 0", "replicas: 1", 1)
	return []helmrepo.Chart{chart(ext, rolloutVersion), chart(ext, rolloutMC50Version), broken}
}

// rolloutSteps is the strategy: 1 %, then 10 % of the rest, then
// the rest (the implicit last step), no soak.
func rolloutSteps() []v1alpha1.RolloutStep {
	one, ten := intstr.FromString("1%"), intstr.FromString("10%")
	return []v1alpha1.RolloutStep{{Name: "canary", Clusters: &one}, {Name: "ten", Clusters: &ten}}
}

// brokenRolloutTimeout is each step's timeout in the bad version's
// rollout: how long a cluster may take before it counts as failed.
const brokenRolloutTimeout = 20 * time.Second

// fleetRollouts runs the rollout phases of the fleet simulation once the
// earlier phases are done:
//
//  6. spec.rollout set to rolloutSteps and extension 0's version bumped:
//     seconds from the change to status.rollout Complete at the new
//     revision (rollout-s);
//  7. the same with maxConcurrent 50 (rollout-mc50-s);
//  8. a version that never becomes healthy, the canary step with a
//     budget of 100 % and the 10 % step with a budget of 0, each step
//     timing out after brokenRolloutTimeout: seconds from the halt (in
//     the 10 % step) to RolledBack (rollback-s), from the change to
//     RolledBack (rollback-total-s), and from the halt until every
//     cluster is Ready again at the version before (rollback-ready-s).
func fleetRollouts(b *testing.B, c client.Client, track *installationTracker, ro *rolloutTracker, size fleetSize, timeout time.Duration) {
	b.Helper()
	ext := fleetExtension(0)
	// Phase 5's member came back: every cluster answers again, so that
	// no cluster is skipped, and its rollout is done.
	waitUntil(b, timeout, func() error { return allReachable(c, size.clusters) })
	ro.wait(b, timeout, func(st v1alpha1.RolloutStatus) bool { return st.Phase == v1alpha1.RolloutComplete })

	// go test keeps only ten lines of a benchmark's log: phases 6 and 7
	// share one.
	var logged []string
	staged := func(n int, metric, limit string, edit func(*v1alpha1.ExtensionProfile), version string) {
		from := ro.current().Revision
		start := time.Now()
		editProfile(b, c, edit)
		done := ro.wait(b, timeout, func(st v1alpha1.RolloutStatus) bool {
			return st.Revision > from && st.Phase == v1alpha1.RolloutComplete
		})
		b.ReportMetric(done.Sub(start).Seconds(), metric)
		track.phase(func(in *v1alpha1.ExtensionInstallation) bool {
			return in.Spec.Extension == ext && in.Status.InstalledVersion == version && ready(in)
		})
		track.wait(b, size.clusters, time.Minute) // Complete means every cluster has it
		logged = append(logged, fmt.Sprintf("%d. rollout of %s %s to %d clusters (1 %%, 10 %%, rest%s): Complete %.1f s after the change (%s; loadavg %s)",
			n, ext, version, size.clusters, limit, done.Sub(start).Seconds(), ro.since(start), loadavg()))
	}

	// 6. Three steps, no limit.
	staged(6, "rollout-s", "", func(p *v1alpha1.ExtensionProfile) {
		p.Spec.Rollout = &v1alpha1.RolloutStrategy{Steps: rolloutSteps()}
		p.Spec.Extensions[0].Version = rolloutVersion
	}, rolloutVersion)

	// 7. The same, never more than 50 clusters changing at once.
	staged(7, "rollout-mc50-s", ", maxConcurrent 50", func(p *v1alpha1.ExtensionProfile) {
		fifty := intstr.FromInt32(50)
		p.Spec.Rollout = &v1alpha1.RolloutStrategy{Steps: rolloutSteps(), MaxConcurrent: &fifty}
		p.Spec.Extensions[0].Version = rolloutMC50Version
	}, rolloutMC50Version)

	b.Log(strings.Join(logged, "; "))

	// 8. A version that never becomes healthy halts in the 10 % step and
	// is rolled back.
	from := ro.current().Revision
	start := time.Now()
	editProfile(b, c, func(p *v1alpha1.ExtensionProfile) {
		all, none := intstr.FromString("100%"), intstr.FromInt32(0)
		stepTimeout := &metav1.Duration{Duration: brokenRolloutTimeout}
		steps := rolloutSteps()
		steps[0].MaxUnavailable, steps[0].Timeout = &all, stepTimeout
		steps[1].MaxUnavailable, steps[1].Timeout = &none, stepTimeout
		p.Spec.Rollout = &v1alpha1.RolloutStrategy{Steps: steps}
		p.Spec.Extensions[0].Version = brokenVersion
	})
	halted := ro.wait(b, timeout, func(st v1alpha1.RolloutStatus) bool { return st.Revision > from && st.HaltedAt != nil })
	// Counted from the halt: the clusters it changed are Ready again at
	// the version before (the rest count at once).
	track.phase(func(in *v1alpha1.ExtensionInstallation) bool {
		return in.Spec.Extension == ext && in.Spec.Version == rolloutMC50Version && in.Status.InstalledVersion == rolloutMC50Version && ready(in)
	})
	rolledBack := ro.wait(b, timeout, func(st v1alpha1.RolloutStatus) bool {
		return st.Revision > from && st.Phase == v1alpha1.RolloutRolledBack
	})
	track.wait(b, size.clusters, timeout)
	readyAgain := time.Now()
	final := ro.current()
	b.ReportMetric(rolledBack.Sub(halted).Seconds(), "rollback-s")
	b.ReportMetric(rolledBack.Sub(start).Seconds(), "rollback-total-s")
	b.ReportMetric(readyAgain.Sub(halted).Seconds(), "rollback-ready-s")
	b.Logf("8. %s %s (step timeout %s): halted %.1f s after the change (%s); RolledBack %.1f s after the halt, %.1f s after the change; "+
		"every cluster Ready at %s again %.1f s after the halt; %d clusters rolled back; %s; loadavg %s",
		ext, brokenVersion, brokenRolloutTimeout, halted.Sub(start).Seconds(), final.HaltReason, rolledBack.Sub(halted).Seconds(),
		rolledBack.Sub(start).Seconds(), rolloutMC50Version, readyAgain.Sub(halted).Seconds(), final.Counts.RolledBack, ro.since(start), loadavg())
	if final.Step != 1 {
		b.Errorf("the bad version halted in step %d (%s), want step 1 (ten): %s", final.Step, final.StepName, final.HaltReason)
	}
}

// allReachable is nil once n ManagedClusters are Reachable.
func allReachable(c client.Client, n int) error {
	var mcs v1alpha1.ManagedClusterList
	if err := c.List(context.Background(), &mcs); err != nil {
		return err
	}
	reachable := 0
	for _, mc := range mcs.Items {
		if meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReachable) {
			reachable++
		}
	}
	if reachable < n {
		return fmt.Errorf("%d of %d clusters Reachable", reachable, n)
	}
	return nil
}

// rolloutTracker watches the simulation's profile and remembers when its
// status.rollout first showed each revision, phase and step.
type rolloutTracker struct {
	mu   sync.Mutex
	seen []rolloutSeen
}

// rolloutSeen is one state of the rollout and when it was first seen.
type rolloutSeen struct {
	at time.Time
	st v1alpha1.RolloutStatus
}

// trackRollout starts an informer on the hub's profiles (one list and one
// watch: the benchmark does not poll the hub).
func trackRollout(b *testing.B, hub *testenv.Env) *rolloutTracker {
	b.Helper()
	ca, err := cache.New(unlimited(hub.Config), cache.Options{Scheme: hub.Scheme})
	must(b, err)
	t := &rolloutTracker{}
	inf, err := ca.GetInformer(context.Background(), &v1alpha1.ExtensionProfile{})
	must(b, err)
	see := func(obj any) {
		p, ok := obj.(*v1alpha1.ExtensionProfile)
		if !ok || p.Name != fleetProfile || p.Status.Rollout == nil {
			return
		}
		t.observe(*p.Status.Rollout.DeepCopy(), time.Now())
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, obj any) { see(obj) }})
	must(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = ca.Start(ctx) }()
	b.Cleanup(cancel)
	if !ca.WaitForCacheSync(ctx) {
		b.Fatal("the profiles' informer did not sync")
	}
	return t
}

// observe records st when its revision, phase, step or halt differ from
// the last state seen.
func (t *rolloutTracker) observe(st v1alpha1.RolloutStatus, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.seen); n > 0 {
		last := t.seen[n-1].st
		if last.Revision == st.Revision && last.Phase == st.Phase && last.Step == st.Step && (last.HaltedAt == nil) == (st.HaltedAt == nil) {
			t.seen[n-1].st = st // newer counts, same state
			return
		}
	}
	t.seen = append(t.seen, rolloutSeen{at: at, st: st})
}

// current is the last state seen (zero before any).
func (t *rolloutTracker) current() v1alpha1.RolloutStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.seen) == 0 {
		return v1alpha1.RolloutStatus{}
	}
	return t.seen[len(t.seen)-1].st
}

// wait waits until a state seen meets cond, and returns when the first
// one that did was seen.
func (t *rolloutTracker) wait(b *testing.B, timeout time.Duration, cond func(v1alpha1.RolloutStatus) bool) time.Time {
	b.Helper()
	var at time.Time
	testenv.Eventually(b, timeout, func() error {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, s := range t.seen {
			if cond(s.st) {
				at = s.at
				return nil
			}
		}
		if len(t.seen) == 0 {
			return fmt.Errorf("no rollout status yet")
		}
		last := t.seen[len(t.seen)-1].st
		return fmt.Errorf("rollout of revision %d: %s, step %d (%s): %s", last.Revision, last.Phase, last.Step, last.StepName, last.Message)
	})
	return at
}

// since lists the states seen from start on, each with its offset: where
// a rollout's time went, step by step.
func (t *rolloutTracker) since(start time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var parts []string
	for _, s := range t.seen {
		if s.at.Before(start) {
			continue
		}
		step := s.st.StepName
		if step == "" {
			step = fmt.Sprint(s.st.Step)
		}
		parts = append(parts, fmt.Sprintf("+%.1f s r%d %s %s", s.at.Sub(start).Seconds(), s.st.Revision, s.st.Phase, step))
	}
	return strings.Join(parts, ", ")
}
