package resolve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// channelIndex is one channel of an operator package (or, with an empty
// name, every channel together), built once in NewIndex: its bundles and
// its upgrade edges.
type channelIndex struct {
	name       string
	deprecated bool // the catalog deprecates the channel
	members    vset // the versions that are entries of the channel
	// succ[k] are the direct successors of version k in the channel (the
	// entries whose replaces or skips name it or whose skipRange contains
	// it), highest first.
	succ [][]int
	// edges are the channel's entries, for an installed version that the
	// catalog no longer lists.
	edges []channelEdge
}

// channelEdge is one entry of a channel: version to, and what it upgrades
// directly.
type channelEdge struct {
	to    int
	from  []string            // replaces and skips, as canonical versions
	skips *semver.Constraints // skipRange; nil when none
}

// canonical returns a version as semver prints it ("v1.0" → "1.0.0"), or
// the text itself when it does not parse.
func canonical(v string) string {
	sv, err := semver.NewVersion(strings.TrimSpace(v))
	if err != nil {
		return strings.TrimSpace(v)
	}
	return sv.String()
}

// indexChannels builds e's channels, the union of them all (e.all), and
// leaves out of e.current the versions whose every channel is deprecated.
// An extension none of whose versions has a channel has none.
func indexChannels(e *extIndex, defaultChannel string, ranges rangeCache) {
	n := len(e.versions)
	e.defaultChannel = defaultChannel
	byCanon := make(map[string]int, n)
	for k := range e.versions {
		byCanon[e.versions[k].sv.String()] = k
	}
	for k := range e.versions {
		for _, ce := range e.versions[k].spec.Channels {
			if e.channels == nil {
				e.channels = map[string]*channelIndex{}
				e.all = &channelIndex{members: make(vset, words(n)), succ: make([][]int, n)}
			}
			c := e.channels[ce.Name]
			if c == nil {
				c = &channelIndex{name: ce.Name, members: make(vset, words(n)), succ: make([][]int, n)}
				e.channels[ce.Name] = c
				e.channelNames = append(e.channelNames, ce.Name)
			}
			c.deprecated = c.deprecated || ce.Deprecated
			edge := channelEdge{to: k}
			if ce.Replaces != "" {
				edge.from = append(edge.from, canonical(ce.Replaces))
			}
			for _, s := range ce.Skips {
				edge.from = append(edge.from, canonical(s))
			}
			if text := strings.TrimSpace(ce.SkipRange); text != "" {
				edge.skips, _ = ranges.parse(text) // a range that does not parse has no edges
			}
			for _, ch := range []*channelIndex{c, e.all} {
				ch.members.add(k)
				ch.edges = append(ch.edges, edge)
				for _, f := range edge.from {
					if j, ok := byCanon[f]; ok && j != k {
						ch.succ[j] = append(ch.succ[j], k)
					}
				}
				if edge.skips != nil {
					for j := range e.versions {
						if j != k && edge.skips.Check(e.versions[j].sv) {
							ch.succ[j] = append(ch.succ[j], k)
						}
					}
				}
			}
		}
	}
	if e.channels == nil {
		return
	}
	slices.Sort(e.channelNames)
	for _, c := range append(slices.Collect(mapValues(e.channels)), e.all) {
		for j, s := range c.succ {
			slices.Sort(s)
			slices.Reverse(s)
			c.succ[j] = slices.Compact(s)
		}
	}
	// A bundle that only deprecated channels carry is preferred last, as a
	// deprecated bundle is.
	for k := range e.versions {
		live := len(e.versions[k].spec.Channels) == 0
		for _, ce := range e.versions[k].spec.Channels {
			live = live || !e.channels[ce.Name].deprecated
		}
		if !live {
			e.current[k/64] &^= 1 << (k % 64)
		}
	}
}

func mapValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// successors returns the direct successors of the installed version in c,
// highest first: version index idx, or, when the catalog no longer lists
// it (idx < 0), the version sv.
func (c *channelIndex) successors(idx int, sv *semver.Version) []int {
	if idx >= 0 {
		return c.succ[idx]
	}
	var out []int
	for _, edge := range c.edges {
		if slices.Contains(edge.from, sv.String()) || edge.skips != nil && edge.skips.Check(sv) {
			out = append(out, edge.to)
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	return slices.Compact(out)
}

// channelPhrase names a channel in texts.
func (c *channelIndex) phrase() string {
	if c.name == "" {
		return "in any channel"
	}
	return "in channel " + c.name
}

// channelChoice is the channel an installation resolves in.
type channelChoice struct {
	ch        *channelIndex // nil for an extension without channels
	defaulted bool          // the package's defaultChannel, spec.channel being empty
}

// channelRequirement narrows an installation's range to its channel and,
// under the Successors policy, to what the installed version's upgrade
// edges lead to; or explains why nothing is left. idx is the installed
// version's index (-1 when not installed or not listed), sv its version.
func (pr *problem) channelRequirement(i int, e *extIndex, inRange vset, idx int, sv *semver.Version) (vset, *Explanation) {
	in := pr.insts[i]
	fail := func(msg string) *Explanation {
		return &Explanation{Reason: v1alpha1.ReasonNoMatchingVersion, Message: msg, Installations: []string{in.Name}}
	}
	if e.channels == nil {
		if in.Channel != "" {
			return nil, fail(fmt.Sprintf("%s asks for channel %q, but %s has no channels (channels are for operator bundles); remove spec.channel of %s.",
				in.Name, in.Channel, in.Extension, in.Name))
		}
		return inRange, nil
	}
	choice := channelChoice{ch: e.all}
	name := in.Channel
	if name == "" && e.defaultChannel != "" {
		name, choice.defaulted = e.defaultChannel, true
	}
	if name != "" {
		choice.ch = e.channels[name]
		if choice.ch == nil {
			what, fix := "spec.channel", "Change spec.channel of "+in.Name+" to one of them."
			if choice.defaulted {
				what, fix = "the package's defaultChannel", "Set spec.channel of "+in.Name+" to one of them."
			}
			return nil, fail(fmt.Sprintf("%s wants %s in channel %s (%s), but %s has no such channel (channels: %s). %s",
				in.Name, in.Extension, name, what, in.Extension, strings.Join(e.channelNames, ", "), fix))
		}
	}
	pr.channels[i] = choice
	c := choice.ch
	set := inRange.and(c.members)
	if set.empty() {
		return nil, fail(fmt.Sprintf("%s wants %s %s %s, but no version %s is in that range (%s). Change spec.version or spec.channel of %s.",
			in.Name, in.Extension, rangeOrAny(in.Range), c.phrase(), c.phrase(), c.listing(e), in.Name))
	}
	if in.AnyInRange || in.Installed == "" || sv == nil {
		return set, nil
	}
	direct := c.successors(idx, sv)
	member := idx >= 0 && c.members.has(idx)
	if !member && len(direct) == 0 {
		return nil, fail(fmt.Sprintf("%s has %s %s installed, which is not %s and has no successor there (%s). "+
			"Choose a channel that has %s or a successor of it in spec.channel of %s, or set spec.upgrade.graph of %s to AnyInRange to move to a version %s regardless.",
			in.Name, in.Extension, in.Installed, c.phrase(), c.listing(e), in.Installed, in.Name, in.Name, c.phrase()))
	}
	reach := pr.reachable(e, c, idx, direct)
	if member {
		reach.add(idx)
	}
	allowed := set.and(reach)
	if allowed.empty() {
		top := set.highest()
		var names []string
		for _, k := range direct {
			names = append(names, e.versions[k].spec.Version)
		}
		succ := "it has no successor there"
		if len(names) > 0 {
			succ = "its successors there: " + strings.Join(names, ", ")
		}
		return nil, fail(fmt.Sprintf("%s %s is not a successor of %s %s, and no upgrade edges lead from %s to a version in %s (%s). "+
			"Change spec.version of %s, or set spec.upgrade.graph of %s to AnyInRange to move off the upgrade graph.",
			in.Extension, e.versions[top].spec.Version, in.Installed, c.phrase(), in.Installed, rangeOrAny(in.Range), succ, in.Name, in.Name))
	}
	return allowed, nil
}

// listing lists a channel's versions for texts, newest first, at most five.
func (c *channelIndex) listing(e *extIndex) string {
	var vs []string
	total := c.members.count()
	for k := len(e.versions) - 1; k >= 0 && len(vs) < 5; k-- {
		if c.members.has(k) {
			vs = append(vs, e.versions[k].spec.Version)
		}
	}
	if total > len(vs) {
		vs = append(vs, fmt.Sprintf("and %d more", total-len(vs)))
	}
	return strings.TrimPrefix(c.phrase(), "in ") + " has " + strings.Join(vs, ", ")
}

// reachable returns the versions that upgrade edges in c lead to from the
// installed version, whose direct successors are direct, passing only
// through versions that run on the cluster.
func (pr *problem) reachable(e *extIndex, c *channelIndex, installed int, direct []int) vset {
	out := make(vset, words(len(e.versions)))
	queue := make([]int, 0, len(e.versions))
	for _, k := range direct {
		if k != installed && !out.has(k) && pr.kube.runsOn(&e.versions[k]) {
			out.add(k)
			queue = append(queue, k)
		}
	}
	for len(queue) > 0 {
		j := queue[0]
		queue = queue[1:]
		for _, k := range c.succ[j] {
			if k != installed && !out.has(k) && pr.kube.runsOn(&e.versions[k]) {
				out.add(k)
				queue = append(queue, k)
			}
		}
	}
	return out
}

// nextHop returns the version to install now on the way from the
// installed version to target: the highest direct successor from which
// target can be reached (target itself when it is one), or -1.
func (pr *problem) nextHop(e *extIndex, c *channelIndex, installed int, sv *semver.Version, target int) int {
	for _, d := range c.successors(installed, sv) {
		if d == target {
			return d
		}
		if !pr.kube.runsOn(&e.versions[d]) {
			continue
		}
		if pr.reachable(e, c, installed, c.succ[d]).has(target) {
			return d
		}
	}
	return -1
}

// hop fills in sel, for installation i of extension pkg that resolved to
// version v: the channel used and, under the Successors policy, the next
// hop toward v when v is not a direct successor of the installed version.
func (pr *problem) hop(sel *Selection, i, pkg, v int) {
	choice := pr.channels[i]
	if choice.ch == nil {
		return
	}
	sel.Channel, sel.DefaultChannelUsed = choice.ch.name, choice.defaulted
	in := pr.insts[i]
	if in.AnyInRange || in.Installed == "" {
		return
	}
	e := &pr.ix.exts[pkg]
	idx := pr.installed[i]
	if idx == v {
		return
	}
	var sv *semver.Version
	if idx >= 0 {
		sv = e.versions[idx].sv
	} else if parsed, err := semver.NewVersion(in.Installed); err == nil {
		sv = parsed
	} else {
		return
	}
	h := pr.nextHop(e, choice.ch, idx, sv, v)
	if h < 0 || h == v {
		return
	}
	target := e.versions[v].spec
	sel.Target = &target
	sel.Version = e.versions[h].spec
	sel.Hop = fmt.Sprintf("%s %s is not a successor of %s %s; %s is — it will be installed first",
		e.name, target.Version, in.Installed, choice.ch.phrase(), sel.Version.Version)
}
