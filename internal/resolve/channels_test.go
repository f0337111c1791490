package resolve

import (
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// bundle builds an operator bundle version in the given channels.
func bundle(version string, channels ...v1alpha1.ChannelEntry) v1alpha1.ExtensionVersion {
	v := ev(version, "")
	v.Engine = v1alpha1.EngineBundle
	v.Channels = channels
	return v
}

// in builds a channel entry: in("stable", "0.1.0") replaces 0.1.0.
func in(channel, replaces string) v1alpha1.ChannelEntry {
	return v1alpha1.ChannelEntry{Name: channel, Replaces: replaces}
}

// memcached is an operator with a stable channel (a replaces chain
// 0.1.0 → 0.2.0 → 0.3.0) and a fast channel (0.1.0 → 0.2.0, then 0.4.0
// skipping everything below it).
var memcached = Universe{"memcached-operator": {
	bundle("0.1.0", in("stable", ""), in("fast", "")),
	bundle("0.2.0", in("stable", "0.1.0"), in("fast", "0.1.0")),
	bundle("0.3.0", in("stable", "0.2.0")),
	bundle("0.4.0", v1alpha1.ChannelEntry{Name: "fast", SkipRange: ">=0.1.0 <0.4.0"}),
}}

const mc = "memcached-operator"

// TestSolveChannels covers operator packages: the channel used, the
// upgrade graph, and the next hop of a multi-hop upgrade.
func TestSolveChannels(t *testing.T) {
	tests := []struct {
		name      string
		universe  Universe
		defaults  map[string]string // package → defaultChannel
		inst      Installation
		version   string // Selection.Version
		target    string // Selection.Target, "" when nil
		channel   string
		defaulted bool
		hop       string // Selection.Hop
		failure   string // the Explanation's message, when it fails
	}{
		{
			// No spec.channel: the package's defaultChannel is used and
			// said to be; 0.4.0 is only in fast.
			name: "default channel used", universe: memcached, defaults: map[string]string{mc: "stable"},
			inst:    want("ops/mc", mc, ""),
			version: "0.3.0", channel: "stable", defaulted: true,
		},
		{
			// spec.channel wins over the default.
			name: "explicit channel", universe: memcached, defaults: map[string]string{mc: "stable"},
			inst:    Installation{Name: "ops/mc", Extension: mc, Channel: "fast"},
			version: "0.4.0", channel: "fast",
		},
		{
			// 0.1.0 → 0.2.0 → 0.3.0 by replaces: the next hop 0.2.0 is
			// returned, with 0.3.0 as the target.
			name: "replaces chain of two hops", universe: memcached, defaults: map[string]string{mc: "stable"},
			inst:    auto("ops/mc", mc, "", "0.1.0", false),
			version: "0.2.0", target: "0.3.0", channel: "stable", defaulted: true,
			hop: "memcached-operator 0.3.0 is not a successor of 0.1.0 in channel stable; 0.2.0 is — it will be installed first",
		},
		{
			// The last hop: 0.3.0 replaces the installed 0.2.0.
			name: "last hop of the chain", universe: memcached, defaults: map[string]string{mc: "stable"},
			inst:    auto("ops/mc", mc, "", "0.2.0", false),
			version: "0.3.0", channel: "stable", defaulted: true,
		},
		{
			// 0.3.0 skips 0.1.0: one hop, straight to it.
			name: "skips", universe: Universe{mc: {
				bundle("0.1.0", in("stable", "")),
				bundle("0.2.0", in("stable", "0.1.0")),
				bundle("0.3.0", v1alpha1.ChannelEntry{Name: "stable", Replaces: "0.2.0", Skips: []string{"0.1.0"}}),
			}},
			inst:    Installation{Name: "ops/mc", Extension: mc, Channel: "stable", Installed: "0.1.0", Automatic: true},
			version: "0.3.0", channel: "stable",
		},
		{
			// 0.4.0's skipRange contains 0.1.0: one hop in channel fast.
			name: "skipRange", universe: memcached,
			inst:    Installation{Name: "ops/mc", Extension: mc, Channel: "fast", Installed: "0.1.0", Automatic: true},
			version: "0.4.0", channel: "fast",
		},
		{
			// No edge leads from 0.1.0 to 0.3.0: refused, with the
			// successors named and the fixes.
			name: "non-successor refused", universe: Universe{mc: {
				bundle("0.1.0", in("stable", "")),
				bundle("0.2.0", in("stable", "0.1.0")),
				bundle("0.3.0", in("stable", "")),
			}},
			inst: Installation{Name: "ops/mc", Extension: mc, Channel: "stable", Range: ">=0.3.0", Installed: "0.1.0", Automatic: true},
			failure: "memcached-operator 0.3.0 is not a successor of 0.1.0 in channel stable, and no upgrade edges lead from 0.1.0 " +
				"to a version in >=0.3.0 (its successors there: 0.2.0). Change spec.version of ops/mc, or set spec.upgrade.graph " +
				"of ops/mc to AnyInRange to move off the upgrade graph.",
		},
		{
			// AnyInRange ignores the edges and jumps straight to 0.3.0.
			name: "AnyInRange jumps straight", universe: Universe{mc: {
				bundle("0.1.0", in("stable", "")),
				bundle("0.2.0", in("stable", "0.1.0")),
				bundle("0.3.0", in("stable", "")),
			}},
			inst: Installation{Name: "ops/mc", Extension: mc, Channel: "stable", Range: ">=0.3.0", Installed: "0.1.0",
				Automatic: true, AnyInRange: true},
			version: "0.3.0", channel: "stable",
		},
		{
			// Switching channels: 0.3.0 is not in fast, but 0.4.0's
			// skipRange contains it, so it has a successor there.
			name: "channel switch to a channel with a successor", universe: memcached, defaults: map[string]string{mc: "stable"},
			inst:    Installation{Name: "ops/mc", Extension: mc, Channel: "fast", Installed: "0.3.0", Automatic: true},
			version: "0.4.0", channel: "fast",
		},
		{
			// Switching to a channel that has neither the installed
			// version nor a successor of it is refused.
			name: "channel switch without a successor", universe: Universe{mc: append(memcached[mc][:4:4],
				bundle("1.0.0", in("beta", "")))},
			inst: Installation{Name: "ops/mc", Extension: mc, Channel: "beta", Installed: "0.3.0", Automatic: true},
			failure: "ops/mc has memcached-operator 0.3.0 installed, which is not in channel beta and has no successor there " +
				"(channel beta has 1.0.0). Choose a channel that has 0.3.0 or a successor of it in spec.channel of ops/mc, or set " +
				"spec.upgrade.graph of ops/mc to AnyInRange to move to a version in channel beta regardless.",
		},
		{
			// A channel the package does not have: the channels are listed.
			name: "no such channel", universe: memcached,
			inst: Installation{Name: "ops/mc", Extension: mc, Channel: "candidate"},
			failure: "ops/mc wants memcached-operator in channel candidate (spec.channel), but memcached-operator has no such " +
				"channel (channels: fast, stable). Change spec.channel of ops/mc to one of them.",
		},
		{
			// The range admits no version of the channel.
			name: "no version in the channel", universe: memcached, defaults: map[string]string{mc: "stable"},
			inst: want("ops/mc", mc, ">=0.4.0"),
			failure: "ops/mc wants memcached-operator >=0.4.0 in channel stable, but no version in channel stable is in that " +
				"range (channel stable has 0.3.0, 0.2.0, 0.1.0). Change spec.version or spec.channel of ops/mc.",
		},
		{
			// No channel and no default: every bundle counts, but 2.0.0,
			// only in the deprecated channel old, is preferred last.
			name: "deprecated channel preferred last", universe: Universe{mc: {
				bundle("1.5.0", in("stable", "")),
				bundle("2.0.0", v1alpha1.ChannelEntry{Name: "old", Deprecated: true}),
			}},
			inst:    want("ops/mc", mc, ""),
			version: "1.5.0",
		},
		{
			// A deprecated bundle is preferred last within the channel.
			name: "deprecated bundle preferred last", universe: Universe{mc: {
				bundle("0.1.0", in("stable", "")),
				deprecated(bundle("0.2.0", in("stable", "0.1.0"))),
			}},
			inst:    Installation{Name: "ops/mc", Extension: mc, Channel: "stable"},
			version: "0.1.0", channel: "stable",
		},
		{
			// A Helm chart has no channels: spec.channel is refused.
			name: "channel on a chart", universe: Universe{"podinfo": {ev("6.5.0", "")}},
			inst: Installation{Name: "apps/podinfo", Extension: "podinfo", Channel: "stable"},
			failure: "apps/podinfo asks for channel \"stable\", but podinfo has no channels (channels are for operator bundles); " +
				"remove spec.channel of apps/podinfo.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resolution := newIndex(tt.universe, tt.defaults, nil, nil).Solve(Problem{ClusterVersion: "v1.31.0", Installations: []Installation{tt.inst}})
			if tt.failure != "" {
				ex := resolution.Failed[tt.inst.Name]
				if ex == nil {
					t.Fatalf("solved: %+v, want failure", resolution.Selected)
				}
				if ex.Message != tt.failure {
					t.Errorf("message:\n got %s\nwant %s", ex.Message, tt.failure)
				}
				return
			}
			if ex := resolution.Failed[tt.inst.Name]; ex != nil {
				t.Fatalf("failed: %s", ex.Message)
			}
			sel, ok := resolution.For(tt.inst.Extension, tt.inst.Name)
			if !ok {
				t.Fatal("no selection")
			}
			target := ""
			if sel.Target != nil {
				target = sel.Target.Version
			}
			if sel.Version.Version != tt.version || target != tt.target || sel.Channel != tt.channel ||
				sel.DefaultChannelUsed != tt.defaulted || sel.Hop != tt.hop {
				t.Errorf("got version %s target %q channel %q defaulted %v hop %q\nwant version %s target %q channel %q defaulted %v hop %q",
					sel.Version.Version, target, sel.Channel, sel.DefaultChannelUsed, sel.Hop,
					tt.version, tt.target, tt.channel, tt.defaulted, tt.hop)
			}
		})
	}
}

// TestIndexOfDefaultChannel checks that IndexOf takes the defaultChannel
// from the Extensions.
func TestIndexOfDefaultChannel(t *testing.T) {
	ext := v1alpha1.Extension{}
	ext.Name = mc
	ext.Spec.DefaultChannel = "fast"
	ext.Spec.Versions = memcached[mc]
	sel, ok := IndexOf([]v1alpha1.Extension{ext}).Solve(Problem{ClusterVersion: "v1.31.0",
		Installations: []Installation{want("ops/mc", mc, "")}}).For(mc, "ops/mc")
	if !ok || sel.Version.Version != "0.4.0" || sel.Channel != "fast" || !sel.DefaultChannelUsed {
		t.Errorf("got %s in %q (default %v), want 0.4.0 in the default channel fast", sel.Version.Version, sel.Channel, sel.DefaultChannelUsed)
	}
}

// TestProblemForChannel checks that ProblemFor carries spec.channel and
// spec.upgrade.graph.
func TestProblemForChannel(t *testing.T) {
	inst := &v1alpha1.ExtensionInstallation{}
	inst.Namespace, inst.Name = "ops", "mc"
	inst.Spec.Extension, inst.Spec.Channel = mc, "fast"
	inst.Spec.Upgrade.Graph = v1alpha1.UpgradeGraphAnyInRange
	got := ProblemFor("v1.31.0", []*v1alpha1.ExtensionInstallation{inst}).Installations[0]
	if got.Channel != "fast" || !got.AnyInRange {
		t.Errorf("got channel %q AnyInRange %v, want fast and true", got.Channel, got.AnyInRange)
	}
	inst.Spec.Upgrade.Graph = ""
	if ProblemFor("v1.31.0", []*v1alpha1.ExtensionInstallation{inst}).Installations[0].AnyInRange {
		t.Error("an empty graph must mean Successors")
	}
}
