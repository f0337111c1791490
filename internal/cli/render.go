package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// The Write* functions print the view models of this package: as a
// table (or a tree, for status) for people, as YAML or JSON for scripts.
// They are pure apart from writing to w; now is the clock ages are
// measured against, injected so that output is reproducible.

// WriteCatalogs prints catalogs: NAME KIND SOURCE READY EXTENSIONS
// PRIORITY AGE, and the Ready message of those not ready.
func WriteCatalogs(w io.Writer, o Output, cs []CatalogInfo, now time.Time) error {
	if o != OutputTable {
		return writeData(w, o, cs)
	}
	if len(cs) == 0 {
		_, err := fmt.Fprintln(w, "No catalogs. Add one with: annexctl catalog add NAME SOURCE")
		return err
	}
	t := newTable(w)
	fmt.Fprintln(t, "NAME\tKIND\tSOURCE\tREADY\tEXTENSIONS\tPRIORITY\tAGE")
	for _, c := range cs {
		ready := string(c.Ready)
		if c.Suspended {
			ready += " (suspended)"
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", c.Name, c.Kind, orDash(c.Source), ready, c.Extensions, c.Priority, Age(now, c.Created))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	for _, c := range cs {
		if c.Ready != metav1.ConditionTrue && c.Message != "" {
			fmt.Fprintf(w, "\n%s: %s: %s\n", c.Name, c.Reason, c.Message)
		}
	}
	return nil
}

// WriteMatches prints search results: NAME LATEST CATALOGS DESCRIPTION.
func WriteMatches(w io.Writer, o Output, ms []ExtensionMatch) error {
	if o != OutputTable {
		return writeData(w, o, ms)
	}
	if len(ms) == 0 {
		_, err := fmt.Fprintln(w, "No extension matches. List the catalogs with: annexctl catalog list")
		return err
	}
	t := newTable(w)
	fmt.Fprintln(t, "NAME\tLATEST\tCATALOG\tDESCRIPTION")
	for _, m := range ms {
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", m.Name, orDash(m.Latest), orDash(strings.Join(m.Catalogs, ",")), firstLine(m.Description, 60))
	}
	return t.Flush()
}

// WriteExtension prints an extension: its description, then its
// versions (VERSION APP KUBERNETES ENGINE CATALOG DEPENDENCIES), then the
// values schema of the newest version.
func WriteExtension(w io.Writer, o Output, d *ExtensionDetail) error {
	if o != OutputTable {
		return writeData(w, o, d)
	}
	title := d.Name
	if d.DisplayName != "" && d.DisplayName != d.Name {
		title += " (" + d.DisplayName + ")"
	}
	fmt.Fprintln(w, title)
	for _, line := range strings.Split(d.Description, "\n") {
		if line != "" {
			fmt.Fprintln(w, "  "+line)
		}
	}
	for _, kv := range [][2]string{{"home", d.Home}, {"keywords", strings.Join(d.Keywords, ", ")},
		{"catalogs", strings.Join(d.Catalogs, ", ")}, {"default channel", d.DefaultChannel}} {
		if kv[1] != "" {
			fmt.Fprintf(w, "  %s: %s\n", kv[0], kv[1])
		}
	}
	fmt.Fprintln(w)
	t := newTable(w)
	fmt.Fprintln(t, "VERSION\tAPP\tKUBERNETES\tENGINE\tCATALOG\tDEPENDENCIES")
	for _, v := range d.Versions {
		version := v.Version
		if v.Deprecated {
			version += " (deprecated)"
		}
		if v.SignedBy != "" {
			version += " ✓signed"
		}
		deps := make([]string, 0, len(v.Dependencies))
		for _, dep := range v.Dependencies {
			deps = append(deps, strings.TrimSpace(dep.Name+" "+dep.Version))
		}
		kube := v.KubeVersion
		if kube == "" {
			kube = "any"
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\n", version, orDash(v.AppVersion), kube, v.Engine, orDash(v.Catalog), orDash(strings.Join(deps, ", ")))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	for _, v := range d.Versions {
		if v.SignedBy != "" {
			fmt.Fprintf(w, "  %s signed by %s\n", v.Version, v.SignedBy)
		}
	}
	if len(d.Versions) == 0 {
		return nil
	}
	newest := d.Versions[0]
	if newest.Values == nil || len(newest.Values.Properties) == 0 {
		what := "no values schema"
		if newest.Values != nil {
			what = "no values schema and sets no values in values.yaml"
		}
		fmt.Fprintf(w, "\n%s has %s.\n", newest.Version, what)
		if newest.ValuesNote != "" {
			fmt.Fprintln(w, newest.ValuesNote)
		}
		return nil
	}
	fmt.Fprintf(w, "\nValues of %s (set with --set PATH=VALUE or --values FILE):\n", newest.Version)
	t = newTable(w)
	fmt.Fprintln(t, "PATH\tTYPE\tDEFAULT\tDESCRIPTION")
	for _, p := range newest.Values.Properties {
		path := p.Path
		if p.Required {
			path += " (required)"
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\n", path, orDash(p.Type), orDash(firstLine(p.Default, 30)), firstLine(p.Description, 60))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if newest.Values.More > 0 {
		fmt.Fprintf(w, "and %d deeper properties (annexctl show %s -o yaml lists the top two levels only; the schema is in the Extension)\n", newest.Values.More, d.Name)
	}
	if newest.ValuesNote != "" {
		fmt.Fprintln(w, newest.ValuesNote)
	}
	return nil
}

// WriteStatus prints the status tree: one block per cluster, one line per
// installation, its plan and dependencies below it, and the first reason
// a person can act on.
func WriteStatus(w io.Writer, o Output, tree *StatusTree, now time.Time) error {
	if o != OutputTable {
		return writeData(w, o, tree)
	}
	if s := tree.Summary; s != nil && s.Clusters > 0 {
		if err := writeFleetSummary(w, s); err != nil {
			return err
		}
		fmt.Fprintln(w)
		if len(tree.Clusters) == 0 {
			if s.NotReady+s.Unreachable == 0 {
				_, err := fmt.Fprintln(w, "Every cluster is ready.")
				return err
			}
			_, err := fmt.Fprintln(w, "No cluster is in the state asked for.")
			return err
		}
	}
	if len(tree.Clusters) == 0 {
		_, err := fmt.Fprintln(w, "No installations. Install one with: annexctl install EXTENSION")
		return err
	}
	shards := shardTotals(tree)
	// With several shards, the clusters are grouped by shard (the default
	// shard's first), each group in the tree's order.
	clusters := slices.Clone(tree.Clusters)
	slices.SortStableFunc(clusters, func(a, b ClusterStatus) int { return strings.Compare(a.Shard, b.Shard) })
	for i, cs := range clusters {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if len(shards) > 1 && (i == 0 || clusters[i-1].Shard != cs.Shard) {
			t := shards[cs.Shard]
			fmt.Fprintf(w, "shard %s: %d clusters, %d/%d ready\n\n", orDefaultShard(cs.Shard), t.clusters, t.ready, t.total)
		}
		head := "cluster " + cs.Name
		if cs.KubernetesVersion != "" {
			head += ", Kubernetes " + cs.KubernetesVersion
		}
		head += fmt.Sprintf(": %d/%d ready", cs.Ready, cs.Total)
		if !cs.Hub && cs.Reachable != metav1.ConditionTrue {
			head += ", not reachable"
			if cs.Message != "" {
				head += ": " + cs.Message
			}
		}
		if cs.Handover != "" {
			head += "; " + cs.Handover
		}
		fmt.Fprintln(w, head)
		for j, in := range cs.Installations {
			last := j == len(cs.Installations)-1
			branch, indent := "├─ ", "│  "
			if last {
				branch, indent = "└─ ", "   "
			}
			fmt.Fprintf(w, "%s%s\n", branch, installationLine(in, now))
			var sub []string
			if p := in.Progress.Plan; p != nil && (p.State != "COMPLETE" || in.Progress.Stage == StageApply) {
				line := fmt.Sprintf("plan %s: %s", p, p.State)
				if p.Message != "" {
					line += ": " + firstLine(p.Message, 100)
				}
				sub = append(sub, line)
			}
			if in.AdoptedFrom != "" {
				sub = append(sub, "adopted from "+in.AdoptedFrom)
			}
			for _, d := range in.Dependencies {
				line := "needs " + strings.TrimSpace(d.Extension+" "+d.Range) + ": "
				if d.Installation == "" {
					line += "not installed on this cluster"
				} else {
					line += strings.Join(nonEmpty(d.Installation, d.Version, readyWord(d.Ready)), " ")
				}
				sub = append(sub, line)
			}
			if in.Action != "" {
				sub = append(sub, "→ "+firstLine(in.Action, 1000))
			}
			for k, s := range sub {
				b := "├─ "
				if k == len(sub)-1 {
					b = "└─ "
				}
				fmt.Fprintf(w, "%s%s%s\n", indent, b, s)
			}
		}
	}
	if tree.Unlisted > 0 {
		_, err := fmt.Fprintf(w, "\n… and %d more clusters; raise --limit (0 lists every one) or narrow the list with -l, --cluster or --not-ready\n", tree.Unlisted)
		return err
	}
	return nil
}

// shardTotal counts the clusters and installations of one shard.
type shardTotal struct{ clusters, total, ready int }

// shardTotals counts the tree's clusters and installations by shard (""
// the default shard, the hub's).
func shardTotals(tree *StatusTree) map[string]shardTotal {
	out := map[string]shardTotal{}
	for _, cs := range tree.Clusters {
		t := out[cs.Shard]
		t.clusters++
		t.total += cs.Total
		t.ready += cs.Ready
		out[cs.Shard] = t
	}
	return out
}

func orDefaultShard(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

// writeFleetSummary prints the counts above the tree: clusters by
// state, installations, clusters per Kubernetes version and per shard.
func writeFleetSummary(w io.Writer, s *FleetSummary) error {
	t := newTable(w)
	fmt.Fprintf(t, "clusters\t%d: %d ready, %d not ready, %d unreachable\n", s.Clusters, s.Ready, s.NotReady, s.Unreachable)
	fmt.Fprintf(t, "installations\t%d: %d not Ready\n", s.Installations, s.InstallationsNotReady)
	fmt.Fprintf(t, "Kubernetes\t%s\n", countsList(s.KubernetesVersions, "not known"))
	if len(s.Shards) > 0 {
		fmt.Fprintf(t, "shards\t%s\n", countsList(s.Shards, ""))
	}
	return t.Flush()
}

// countsList is "name ×n, name ×n", empty calling a name unnamed.
func countsList(counts []ClusterCount, unnamed string) string {
	parts := make([]string, len(counts))
	for i, c := range counts {
		name := c.Name
		if name == "" {
			name = unnamed
		}
		parts[i] = fmt.Sprintf("%s ×%d", name, c.Clusters)
	}
	return strings.Join(parts, ", ")
}

// installationLine is "ns/name  extension version  Ready|stage  age".
func installationLine(in InstallationStatus, now time.Time) string {
	version := orDash(in.Installed)
	if in.Resolved != "" && in.Resolved != in.Installed {
		if in.Installed == "" {
			version = in.Resolved
		} else {
			version += " → " + in.Resolved
		}
	}
	state := readyWord(in.Ready)
	switch p := in.Progress; {
	case p.Stage == StageUninstall:
		state = "uninstalling"
	case p.State == ProgressSuspended:
		state = "suspended"
	case p.State == ProgressDone:
	case p.State == ProgressFailed:
		state = "failed at " + string(p.Stage)
	case p.State == ProgressApprovalPending:
		state = "waiting for approval"
	default:
		state = string(p.Stage)
		if p.Plan != nil && p.Stage == StageApply {
			state += " " + fmt.Sprintf("%d/%d", p.Plan.Done, p.Plan.Total)
		}
	}
	if r := in.Progress.Reason; r != "" && in.Ready != metav1.ConditionTrue {
		state += " (" + r + ")"
	}
	line := fmt.Sprintf("%s/%s  %s %s  %s  %s", in.Namespace, in.Name, in.Extension, version, state, Age(now, in.Created))
	if in.AddedFor != "" {
		line += "  [added for dependencies]"
	}
	return line
}

func readyWord(s metav1.ConditionStatus) string {
	switch s {
	case metav1.ConditionTrue:
		return "Ready"
	case metav1.ConditionFalse:
		return "NotReady"
	}
	return "Unknown"
}

// WriteEvents prints events: LAST SEEN TYPE REASON OBJECT MESSAGE.
func WriteEvents(w io.Writer, o Output, es []Event, now time.Time) error {
	if o != OutputTable {
		return writeData(w, o, es)
	}
	if len(es) == 0 {
		_, err := fmt.Fprintln(w, "No events.")
		return err
	}
	t := newTable(w)
	fmt.Fprintln(t, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for _, e := range es {
		seen := Age(now, e.Time)
		if e.Count > 1 {
			seen += fmt.Sprintf(" (x%d)", e.Count)
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\n", seen, e.Type, e.Reason, e.Object, firstLine(e.Message, 120))
	}
	return t.Flush()
}

// WriteObject prints a Kubernetes object as YAML or JSON without the
// fields the API server owns (uid, resourceVersion, managedFields,
// creationTimestamp, generation) and without status: what kubectl apply
// takes back. A table output prints "kind/name created|configured".
func WriteObject(w io.Writer, o Output, obj client.Object, verb string) error {
	obj = obj.DeepCopyObject().(client.Object)
	if obj.GetObjectKind().GroupVersionKind().Kind == "" {
		// Typed clients drop apiVersion and kind from what they decode.
		if gvks, _, err := objectScheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if o == OutputTable {
		name := obj.GetName()
		if ns := obj.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
		_, err := fmt.Fprintf(w, "%s %s %s\n", kind, name, verb)
		return err
	}
	clean := obj
	clean.SetUID("")
	clean.SetResourceVersion("")
	clean.SetManagedFields(nil)
	clean.SetCreationTimestamp(metav1.Time{})
	clean.SetGeneration(0)
	data := map[string]any{}
	if err := roundTrip(clean, &data); err != nil {
		return err
	}
	delete(data, "status")
	if m, ok := data["metadata"].(map[string]any); ok {
		delete(m, "creationTimestamp")
	}
	if spec, ok := data["spec"].(map[string]any); ok {
		dropEmptyObjects(spec)
	}
	return writeData(w, o, data)
}

// dropEmptyObjects removes the fields of spec whose value is {}: struct
// fields that omitempty cannot omit, such as an installation's
// spec.upgrade, which the API server defaults alike. Deeper ones stay:
// there {} can mean something (a Catalog's source: {builtin: {}}).
func dropEmptyObjects(spec map[string]any) {
	for k, v := range spec {
		if child, ok := v.(map[string]any); ok && len(child) == 0 {
			delete(spec, k)
		}
	}
}

func nonEmpty(parts ...string) []string {
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// objectScheme names the kinds WriteObject prints.
var objectScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err) // static registration; a failure is a programming error
	}
	return s
}()
