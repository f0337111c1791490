package resolve

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// maxMessage is the length a message is summarised to stay under.
const maxMessage = 600

// maxVersionTrials bounds the extra solves that look for a version of the
// failed installation's extension to suggest.
const maxVersionTrials = 6

// maxOtherTrials bounds the other installations in a conflict whose
// change is checked (two solves each) to fix the failed one.
const maxOtherTrials = 4

// maxFixConflicts bounds each solve that checks a suggested change: a
// change whose check meets more conflicts is not suggested, so that a
// failure costs a bounded number of bounded solves. Checks on real
// catalogs meet a few conflicts; the bound is for adversarial ones.
const maxFixConflicts = 256

// explain turns the derivation of a failure into one paragraph: the facts
// it rests on, told as a chain starting at installation x, then one or two
// changes that were checked to make x fit.
func (pr *problem) explain(x int, a attempt, active []int) *Explanation {
	ex := &Explanation{Reason: v1alpha1.ReasonNoMatchingVersion}
	if a.stuck != nil {
		ex.Reason = ReasonDependencyCycle
		ex.Installations = []string{pr.insts[x].Name}
		ex.Message = fmt.Sprintf("%s is a dependency cycle that no other choice of versions avoids. "+
			"Remove the cycle from the catalog entries of %s.", pr.cycleText(a.stuck), pr.cycleNames(a.stuck))
		return ex
	}
	n := &narrator{pr: pr, s: a.s, x: x, used: map[int]bool{}, visited: map[int]bool{}, ctx: map[int]*context{}}
	n.leaves = a.s.leaves(a.fail)
	for _, i := range pr.named(a) {
		ex.Installations = append(ex.Installations, pr.insts[i].Name)
	}
	for _, id := range n.leaves {
		if a.s.incs[id].kind == causeCycle {
			ex.Reason = ReasonDependencyCycle
		}
	}
	n.visit(pr.reqs[x][0].pkg)
	for _, id := range n.leaves {
		if !n.used[id] {
			n.visit(n.pkgOf(id))
		}
	}
	fixes := pr.fixes(x, n, active)
	ex.Message = compose(n.parts, fixes)
	return ex
}

// compose joins facts and fixes, dropping facts from the middle of the
// chain ("… and 3 more steps") until the message is short enough.
func compose(parts, fixes []string) string {
	fix := ""
	if len(fixes) > 0 {
		fix = " " + capitalize(strings.Join(fixes, ", or ")) + "."
	}
	keep := len(parts)
	if keep > 7 {
		keep = 6 // a long chain keeps three steps at each end
	}
	for ; ; keep-- {
		shown := parts
		if keep < len(parts) {
			head := (keep + 1) / 2
			tail := keep - head
			shown = append(slices.Clone(parts[:head]), fmt.Sprintf("… and %d more steps", len(parts)-keep))
			shown = append(shown, parts[len(parts)-tail:]...)
		}
		msg := strings.Join(shown, "; ") + "." + fix
		if len(msg) <= maxMessage || keep <= 2 {
			return msg
		}
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// context is how a chain reached an extension: the versions still in play
// and the range text that named them ("" when no single range did).
type context struct {
	set  vset
	text string
}

type narrator struct {
	pr       *problem
	s        *solver
	x        int
	leaves   []int
	used     map[int]bool // leaf ids told
	visited  map[int]bool // extensions visited
	ctx      map[int]*context
	parts    []string
	toldKube bool
}

func (n *narrator) pkgOf(id int) int {
	inc := &n.s.incs[id]
	if inc.group != nil {
		return inc.group.from
	}
	return inc.terms[0].pkg
}

func (n *narrator) narrow(pkg int, set vset, text string) {
	c := n.ctx[pkg]
	if c == nil {
		n.ctx[pkg] = &context{set: set, text: text}
		return
	}
	if inter := c.set.and(set); !inter.equal(c.set) {
		c.set, c.text = inter, ""
		if inter.equal(set) {
			c.text = text
		}
	}
}

// visit tells the facts about one extension: what installations want of
// it, which of its versions the cluster excludes, what its versions need
// (then those extensions, depth first), and what needs it.
func (n *narrator) visit(pkg int) {
	if n.visited[pkg] {
		return
	}
	n.visited[pkg] = true
	ids := n.leavesWhere(func(inc *incompat) bool {
		return (inc.kind == causeRange || inc.kind == causePin || inc.kind == causeNoDowngrade) &&
			inc.terms[0].pkg == pkg
	})
	// The failed installation's own requirements come first.
	slices.SortStableFunc(ids, func(a, b int) int {
		ia, ib := n.s.reqs[n.s.incs[a].req].inst, n.s.reqs[n.s.incs[b].req].inst
		switch {
		case ia == ib:
			return 0
		case ia == n.x:
			return -1
		case ib == n.x:
			return 1
		}
		return ia - ib
	})
	wanters := map[int]bool{}
	why := n.sharedBecause(ids)
	noted := -1 // the part that says why one version serves the cluster
	for _, id := range ids {
		r := n.s.reqs[n.s.incs[id].req]
		n.used[id] = true
		n.parts = append(n.parts, n.requirementText(r))
		text := ""
		if r.kind == causeRange {
			text = strings.TrimSpace(n.pr.insts[r.inst].Range)
		}
		n.narrow(pkg, r.set, text)
		wanters[r.inst] = true
		if len(wanters) == 2 {
			n.parts[len(n.parts)-1] += " (one version of " + n.name(pkg) + " serves the whole cluster" + why + ")"
			noted = len(n.parts) - 1
		}
	}
	// One installation against a dependency: it shares the version the
	// dependents need because its content is cluster-scoped, and the
	// text says so when that is known.
	if noted < 0 && len(ids) > 0 && why != "" && slices.ContainsFunc(n.leaves, func(id int) bool {
		inc := &n.s.incs[id]
		return inc.kind == causeDependency && inc.group.to == pkg
	}) {
		n.parts[len(n.parts)-1] += " (one version of " + n.name(pkg) + " serves the whole cluster" + why + ")"
	}
	for _, id := range n.leavesWhere(func(inc *incompat) bool { return inc.kind == causeKube && inc.terms[0].pkg == pkg }) {
		inc := &n.s.incs[id]
		n.used[id] = true
		n.parts = append(n.parts, fmt.Sprintf("%s needs Kubernetes %s", n.versionsOf(pkg, inc.terms[0].set), cleanKube(inc.kubeText)))
		if !n.toldKube {
			n.toldKube = true
			n.parts = append(n.parts, "the cluster runs "+n.clusterText())
		}
	}
	// Outgoing dependencies, merged when they cover the same versions.
	var targets []int
	var lastWho string
	out := n.leavesWhere(func(inc *incompat) bool { return inc.kind == causeDependency && inc.group.from == pkg })
	slices.SortStableFunc(out, func(a, b int) int {
		return strings.Compare(n.s.incs[a].group.toName, n.s.incs[b].group.toName)
	})
	for _, id := range out {
		g := n.s.incs[id].group
		n.used[id] = true
		who := n.versionsOf(pkg, g.versions)
		need := n.dependencyText(g)
		if who == lastWho {
			n.parts[len(n.parts)-1] += " and " + need
		} else {
			n.parts = append(n.parts, who+" needs "+need)
		}
		lastWho = who
		if g.to >= 0 && g.to != pkg && !g.allowed.empty() {
			n.narrow(g.to, g.allowed, g.rangeText)
			targets = append(targets, g.to)
		}
	}
	for _, id := range n.leavesWhere(func(inc *incompat) bool {
		return inc.kind == causeCycle && slices.ContainsFunc(inc.cycle, func(p pick) bool { return p.pkg == pkg })
	}) {
		n.used[id] = true
		n.parts = append(n.parts, n.pr.cycleText(n.s.incs[id].cycle)+" is a dependency cycle")
	}
	for _, t := range targets {
		n.visit(t)
	}
	// Whatever else needs this extension, told from its own side.
	for _, id := range n.leavesWhere(func(inc *incompat) bool { return inc.kind == causeDependency && inc.group.to == pkg }) {
		n.visit(n.s.incs[id].group.from)
	}
}

// sharedBecause returns ": " and what makes the installations of the
// requirements ids share their extension's version (the first
// cluster-scoped object known of their content, the failed installation's
// first), or "" when none is known.
func (n *narrator) sharedBecause(ids []int) string {
	for _, id := range ids {
		if text := n.pr.insts[n.s.reqs[n.s.incs[id].req].inst].ClusterScoped; text != "" {
			return ": " + text
		}
	}
	return ""
}

// leavesWhere returns the untold leaves matching f, in derivation order.
func (n *narrator) leavesWhere(f func(*incompat) bool) []int {
	var out []int
	for _, id := range n.leaves {
		if !n.used[id] && f(&n.s.incs[id]) {
			out = append(out, id)
		}
	}
	return out
}

func (n *narrator) name(pkg int) string { return n.pr.ix.exts[pkg].name }

func (n *narrator) requirementText(r requirement) string {
	in := n.pr.insts[r.inst]
	switch r.kind {
	case causePin:
		return fmt.Sprintf("%s keeps %s %s (installed; automatic upgrades are off)", in.Name, in.Extension, in.Installed)
	case causeNoDowngrade:
		return fmt.Sprintf("%s has %s %s installed and downgrades are not allowed", in.Name, in.Extension, in.Installed)
	}
	where := ""
	if c := n.pr.channels[r.inst].ch; c != nil && c.name != "" {
		where = " " + c.phrase()
	}
	if rangeOrAny(in.Range) == "*" {
		return fmt.Sprintf("%s wants any version of %s%s", in.Name, in.Extension, where)
	}
	return fmt.Sprintf("%s wants %s %s%s", in.Name, in.Extension, strings.TrimSpace(in.Range), where)
}

func (n *narrator) dependencyText(g *depGroup) string {
	need := g.toName
	if g.rangeText != "" && g.rangeText != "*" {
		need += " " + g.rangeText
	}
	switch {
	case g.to < 0 && n.pr.ix.apiNotes[g.toName] != "":
		return need + ", but " + n.pr.ix.apiNotes[g.toName]
	case g.to < 0:
		return need + ", which no catalog offers"
	case g.allowed.empty():
		return need + ", but no " + g.toName + " version is in that range (available: " + n.available(g.to, 3) + ")"
	}
	return need
}

func (n *narrator) available(pkg, max int) string {
	vs := n.pr.ix.exts[pkg].versions
	var out []string
	for k := len(vs) - 1; k >= 0 && len(out) < max; k-- {
		out = append(out, vs[k].spec.Version)
	}
	if len(vs) > max {
		out = append(out, "…")
	}
	return strings.Join(out, ", ")
}

// versionsOf names a set of versions of pkg as narrowly as the chain
// allows: "hello 0.2.0 (installed)", "every cert-manager >=1.15",
// "cert-manager 1.15.0 to 1.16.2".
func (n *narrator) versionsOf(pkg int, set vset) string {
	name := n.name(pkg)
	c := n.ctx[pkg]
	shown := set
	if c != nil {
		if inter := set.and(c.set); !inter.empty() {
			shown = inter
		}
	}
	vs := n.pr.ix.exts[pkg].versions
	if shown.count() == 1 {
		v := shown.highest()
		text := name + " " + vs[v].spec.Version
		for i, in := range n.pr.installed {
			if in == v && n.pr.reqs[i] != nil && n.pr.reqs[i][0].pkg == pkg {
				return text + " (installed)"
			}
		}
		return text
	}
	if c != nil && shown.equal(c.set) && c.text != "" && c.text != "*" {
		return "every " + name + " " + c.text
	}
	if shown.equal(fullSet(len(vs))) {
		return "every version of " + name
	}
	return describeSet(name, vs, shown)
}

// describeSet writes a set as runs of consecutive versions; pre-releases
// outside the set do not break a run.
func describeSet(name string, vs []indexedVersion, set vset) string {
	type run struct{ lo, hi int }
	var runs []run
	open := false
	for k := range vs {
		switch {
		case set.has(k) && open:
			runs[len(runs)-1].hi = k
		case set.has(k):
			runs = append(runs, run{k, k})
			open = true
		case vs[k].sv.Prerelease() == "":
			open = false
		}
	}
	if len(runs) == 1 {
		r := runs[0]
		lowest, highest := firstRelease(vs, set, false), firstRelease(vs, set, true)
		switch {
		case r.hi == highest && r.lo > lowest:
			return "every " + name + " >=" + vs[r.lo].spec.Version
		case r.lo == lowest && r.hi < highest:
			return "every " + name + " <=" + vs[r.hi].spec.Version
		}
		return name + " " + vs[r.lo].spec.Version + " to " + vs[r.hi].spec.Version
	}
	var texts []string
	for i, r := range runs {
		if i == 3 {
			texts = append(texts, "…")
			break
		}
		if r.lo == r.hi {
			texts = append(texts, vs[r.lo].spec.Version)
		} else {
			texts = append(texts, vs[r.lo].spec.Version+" to "+vs[r.hi].spec.Version)
		}
	}
	return name + " " + strings.Join(texts, ", ")
}

// firstRelease returns the index of the lowest (or highest) version that is
// a release or in set: the ends a run is compared against.
func firstRelease(vs []indexedVersion, set vset, highest bool) int {
	for i := range vs {
		k := i
		if highest {
			k = len(vs) - 1 - i
		}
		if set.has(k) || vs[k].sv.Prerelease() == "" {
			return k
		}
	}
	return -1
}

var helmFloor = regexp.MustCompile(`(\d)-0(\s|,|\||$)`)

// cleanKube drops Helm's "-0" pre-release floors (">=1.28.0-0"), which only
// exist to admit vendor versions and mean ">=1.28.0" to a reader.
func cleanKube(text string) string { return helmFloor.ReplaceAllString(text, "$1$2") }

func (n *narrator) clusterText() string {
	release := n.pr.cluster.String()
	if raw := strings.TrimPrefix(n.pr.clusterRaw, "v"); raw != release {
		return release + " (" + n.pr.clusterRaw + ")"
	}
	return release
}

func (pr *problem) cycleText(cyc []pick) string {
	var steps []string
	for _, p := range append(slices.Clone(cyc), cyc[0]) {
		steps = append(steps, pr.ix.exts[p.pkg].name+" "+pr.ix.exts[p.pkg].versions[p.ver].spec.Version)
	}
	return strings.Join(steps, " → ")
}

func (pr *problem) cycleNames(cyc []pick) string {
	var names []string
	for _, p := range cyc {
		names = append(names, pr.ix.exts[p.pkg].name)
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), " and ")
}

// fixes proposes at most two changes, each checked by solving again:
// a missing catalog, a cluster upgrade, another version or policy for x,
// or a change to another installation in the conflict.
func (pr *problem) fixes(x int, n *narrator, active []int) []string {
	var fixes []string
	for _, id := range n.leaves {
		g := n.s.incs[id].group
		switch {
		case g == nil:
		case g.to < 0 && strings.HasPrefix(g.toName, apiPrefix):
			fixes = appendNew(fixes, "add a Catalog with an operator that owns "+strings.TrimPrefix(g.toName, apiPrefix))
		case g.to < 0:
			fixes = appendNew(fixes, "add a Catalog that offers "+g.toName)
		case g.allowed.empty():
			fixes = appendNew(fixes, "add a Catalog that offers "+g.toName+" "+g.rangeText)
		}
	}
	base := func(without int) []requirement {
		var reqs []requirement
		for _, i := range active {
			if i != without {
				reqs = append(reqs, pr.reqs[i]...)
			}
		}
		return reqs
	}
	xPkg := pr.reqs[x][0].pkg
	rangeOnly := pr.reqs[x][:1]

	// The policy alone: would x fit if its installed version could move?
	if len(pr.reqs[x]) > 1 {
		if a := pr.solveReqs(append(base(-1), rangeOnly...), pr.kube, maxFixConflicts); a.solvable() {
			fixes = appendNew(fixes, pr.policyFix(x, a.chosen[xPkg], false))
		}
	}
	// A newer cluster.
	if up := pr.clusterUpgrade(n); up != nil {
		if pr.solveReqs(append(base(-1), pr.reqs[x]...), pr.ix.kubeChecker(up), maxFixConflicts).solvable() {
			fixes = appendNew(fixes, fmt.Sprintf("upgrade the cluster to %d.%d or later", up.Major(), up.Minor()))
		}
	}
	// Another version of x.
	if len(fixes) < 2 {
		allowed := fullSet(len(pr.ix.exts[xPkg].versions))
		for _, r := range pr.reqs[x] {
			allowed = allowed.and(r.set)
		}
		vs := pr.ix.exts[xPkg].versions
		tried := 0
		for k := len(vs) - 1; k >= 0 && tried < maxVersionTrials; k-- {
			if allowed.has(k) || !pr.kube.runsOn(&vs[k]) ||
				(vs[k].sv.Prerelease() != "" && !rangeOnly[0].set.has(k)) {
				continue
			}
			tried++
			one := make(vset, len(allowed))
			one.add(k)
			trial := append(base(-1), requirement{inst: x, pkg: xPkg, set: one, kind: causeRange})
			if pr.solveReqs(trial, pr.kube, maxFixConflicts).solvable() {
				fixes = appendNew(fixes, pr.policyFix(x, k, !rangeOnly[0].set.has(k)))
				break
			}
		}
	}
	// Another installation in the conflict.
	knobs := map[int][]string{}
	var others []int
	for _, id := range n.leaves {
		inc := &n.s.incs[id]
		switch inc.kind {
		case causeRange, causePin, causeNoDowngrade:
		default:
			continue
		}
		i := n.s.reqs[inc.req].inst
		if i == x {
			continue
		}
		if !slices.Contains(others, i) {
			others = append(others, i)
		}
		knobs[i] = append(knobs[i], map[causeKind]string{
			causeRange: "change spec.version", causePin: "turn on spec.upgrade.automatic",
			causeNoDowngrade: "turn on spec.upgrade.allowDowngrade"}[inc.kind])
	}
	slices.Sort(others)
	for k, i := range others {
		if len(fixes) >= 2 || k == maxOtherTrials {
			break
		}
		yPkg := pr.reqs[i][0].pkg
		anyRange, _, _ := pr.ix.installRange(yPkg, "*")
		anyVersion := requirement{inst: i, pkg: yPkg, set: anyRange, kind: causeRange}
		switch trial := append(base(i), pr.reqs[x]...); {
		case pr.solveReqs(append(trial, anyVersion), pr.kube, maxFixConflicts).solvable():
			slices.Sort(knobs[i])
			fixes = appendNew(fixes, strings.Join(slices.Compact(knobs[i]), " or ")+" of "+pr.insts[i].Name)
		case pr.solveReqs(trial, pr.kube, maxFixConflicts).solvable():
			fixes = appendNew(fixes, "remove "+pr.insts[i].Name)
		}
	}
	if len(fixes) == 0 {
		fixes = append(fixes, n.fallback(others))
	}
	if len(fixes) > 2 {
		fixes = fixes[:2]
	}
	return fixes
}

// policyFix says what to change on x so that it can move to version k.
func (pr *problem) policyFix(x, k int, outOfRange bool) string {
	in := pr.insts[x]
	pkg := pr.reqs[x][0].pkg
	v := pr.ix.exts[pkg].versions[k]
	var knobs []string
	if pr.insts[x].Installed != "" && pr.installed[x] != k {
		iv, err := semver.NewVersion(in.Installed)
		if err == nil {
			if !in.Automatic {
				knobs = append(knobs, "spec.upgrade.automatic")
			}
			if v.sv.LessThan(iv) && !in.AllowDowngrade {
				knobs = append(knobs, "spec.upgrade.allowDowngrade")
			}
		}
	}
	turnOn := strings.Join(knobs, " and ")
	switch {
	case outOfRange && turnOn != "":
		return fmt.Sprintf("set spec.version of %s to \"~%s\" and turn on %s", in.Name, v.spec.Version, turnOn)
	case outOfRange:
		return fmt.Sprintf("set spec.version of %s to \"~%s\"", in.Name, v.spec.Version)
	case turnOn != "":
		return fmt.Sprintf("turn on %s of %s to move it to %s", turnOn, in.Name, v.spec.Version)
	}
	return fmt.Sprintf("let %s move to %s %s", in.Name, in.Extension, v.spec.Version)
}

// clusterUpgrade returns the lowest later minor release that every
// kubeVersion in the explanation admits, or nil when none within 30 minors
// does or no kubeVersion was involved.
func (pr *problem) clusterUpgrade(n *narrator) *semver.Version {
	var texts []string
	for _, id := range n.leaves {
		if inc := &n.s.incs[id]; inc.kind == causeKube {
			texts = append(texts, inc.kubeText)
		}
	}
	if len(texts) == 0 {
		return nil
	}
	for m := pr.cluster.Minor() + 1; m <= pr.cluster.Minor()+30; m++ {
		v := semver.New(pr.cluster.Major(), m, 0, "", "")
		all := true
		for _, t := range texts {
			all = all && KubeVersionAllows(t, v)
		}
		if all {
			return v
		}
	}
	return nil
}

func appendNew(fixes []string, fix string) []string {
	if slices.Contains(fixes, fix) {
		return fixes
	}
	return append(fixes, fix)
}

// fallback is the advice when no single change was found to work.
func (n *narrator) fallback(others []int) string {
	in := n.pr.insts[n.x]
	var names []string
	for _, i := range others {
		names = append(names, n.pr.insts[i].Name)
	}
	kube, cycle := false, []pick(nil)
	for _, id := range n.leaves {
		switch inc := &n.s.incs[id]; inc.kind {
		case causeKube:
			kube = true
		case causeCycle:
			cycle = inc.cycle
		}
	}
	switch {
	case cycle != nil:
		return "remove the cycle from the catalog entries of " + n.pr.cycleNames(cycle)
	case len(names) > 0:
		return fmt.Sprintf("no version of %s fits together with %s; change one of them or remove %s",
			in.Extension, strings.Join(names, " and "), in.Name)
	case kube:
		return fmt.Sprintf("no version of %s supports Kubernetes %s; ask the catalog owners for a release that does, "+
			"or install it on another cluster", in.Extension, n.pr.cluster)
	}
	return fmt.Sprintf("no version of %s has dependencies the catalogs can meet; ask the catalog owners for one that does", in.Extension)
}
