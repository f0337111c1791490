package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// RolloutPhases lists every phase of a rollout, in the order the
// annex_rollout_phase gauge is written.
var RolloutPhases = []v1alpha1.RolloutPhase{
	v1alpha1.RolloutProgressing, v1alpha1.RolloutSoaking, v1alpha1.RolloutWaitingForApproval, v1alpha1.RolloutPaused,
	v1alpha1.RolloutHalted, v1alpha1.RolloutRollingBack, v1alpha1.RolloutRolledBack, v1alpha1.RolloutComplete,
}

var (
	// annex_rollout_clusters{profile,state}, gauge: a profile's clusters
	// per rollout state (status.rollout.counts), at scrape time.
	rolloutClustersDesc = prometheus.NewDesc("annex_rollout_clusters",
		"A profile's clusters by rollout state (pending, inProgress, waitingForWindow, waitingForApproval, done, failed, skipped, rolledBack).",
		[]string{"profile", "state"}, nil)
	// annex_rollout_revision{profile}, gauge: the revision being rolled
	// out (or done); annex_rollout_step{profile} its step, from 0.
	rolloutRevisionDesc = prometheus.NewDesc("annex_rollout_revision",
		"The profile revision being rolled out, or done (status.rollout.revision).", []string{"profile"}, nil)
	rolloutStepDesc = prometheus.NewDesc("annex_rollout_step",
		"The index of the rollout step in progress (status.rollout.step); the number of steps once Complete.", []string{"profile"}, nil)
	// annex_rollout_phase{profile,phase}, gauge: 1 for the rollout's
	// phase, 0 for the others.
	rolloutPhaseDesc = prometheus.NewDesc("annex_rollout_phase",
		"1 for the phase the profile's rollout is in, 0 for the others.", []string{"profile", "phase"}, nil)

	// annex_rollout_halts_total{profile,reason}, counter: rollouts halted
	// (StepFailed, Aborted, ApprovalDenied).
	rolloutHalts = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "annex_rollout_halts_total",
		Help: "Profile rollouts halted, by reason (StepFailed, Aborted, ApprovalDenied).",
	}, []string{"profile", "reason"}), "annex_rollout_halts_total")
	// annex_rollout_moves_total{profile,direction}, counter: clusters a
	// rollout changed to its revision (forward) or returned (rollback).
	rolloutMoves = register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "annex_rollout_moves_total",
		Help: "Clusters a profile's rollout changed to its revision (direction=forward) or returned to the one before (direction=rollback).",
	}, []string{"profile", "direction"}), "annex_rollout_moves_total")
)

// RolloutHalted counts a halt.
func RolloutHalted(profile, reason string) { rolloutHalts.WithLabelValues(profile, reason).Inc() }

// RolloutMoved counts clusters moved forward or back.
func RolloutMoved(profile string, forward, back int) {
	if forward > 0 {
		rolloutMoves.WithLabelValues(profile, "forward").Add(float64(forward))
	}
	if back > 0 {
		rolloutMoves.WithLabelValues(profile, "rollback").Add(float64(back))
	}
}

// rolloutCollector writes the rollout gauges from the profiles in the
// cache, at scrape time.
type rolloutCollector struct{}

func init() {
	register(prometheus.Collector(rolloutCollector{}), "annex_rollout_clusters")
	names = append(names, "annex_rollout_revision", "annex_rollout_step", "annex_rollout_phase")
}

func (rolloutCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rolloutClustersDesc
	ch <- rolloutRevisionDesc
	ch <- rolloutStepDesc
	ch <- rolloutPhaseDesc
}

func (rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	fromCache.mu.Lock()
	reader := fromCache.reader
	fromCache.mu.Unlock()
	if reader == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var profiles v1alpha1.ExtensionProfileList
	if err := reader.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		log.Log.WithName("metrics").Info("rollout gauges left out of this scrape", "error", err.Error())
		return
	}
	for _, m := range RolloutGauges(profiles.Items) {
		ch <- m
	}
}

// RolloutGauges computes the rollout gauges of profiles (pure).
func RolloutGauges(profiles []v1alpha1.ExtensionProfile) []prometheus.Metric {
	var out []prometheus.Metric
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	for _, p := range profiles {
		ro := p.Status.Rollout
		if ro == nil {
			continue
		}
		c := ro.Counts
		for _, s := range []struct {
			state string
			n     int32
		}{{"pending", c.Pending}, {"inProgress", c.InProgress}, {"waitingForWindow", c.WaitingForWindow},
			{"waitingForApproval", c.WaitingForApproval}, {"done", c.Done}, {"failed", c.Failed}, {"skipped", c.Skipped}, {"rolledBack", c.RolledBack}} {
			gauge(rolloutClustersDesc, float64(s.n), p.Name, s.state)
		}
		gauge(rolloutRevisionDesc, float64(ro.Revision), p.Name)
		gauge(rolloutStepDesc, float64(ro.Step), p.Name)
		for _, ph := range RolloutPhases {
			v := 0.0
			if ph == ro.Phase {
				v = 1
			}
			gauge(rolloutPhaseDesc, v, p.Name, string(ph))
		}
	}
	return out
}
