package profile

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/fleet"
	"github.com/annex-platform/annex/internal/rollout"
)

// fleetInputs is what one reconcile of a converged profile of extensions
// extensions over clusters clusters reads: the profile, its clusters,
// each recording revision 1, and one Ready installation per cluster and
// extension, written from revision 1 by the cluster's first move (the
// bench-fleet simulation's shape after its phase 1).
func fleetInputs(clusters, extensions int) (*v1alpha1.ExtensionProfile, []cluster, []v1alpha1.ExtensionInstallation, revisionView) {
	p := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Spec: v1alpha1.ExtensionProfileSpec{
		Namespace:       "fleet",
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "sim"}},
	}}
	for e := range extensions {
		p.Spec.Extensions = append(p.Spec.Extensions, v1alpha1.ProfileExtension{
			Name: fmt.Sprintf("fleet-%d", e), Version: "1.0.0", Mode: v1alpha1.ProfileModeEnforced})
	}
	cs := []cluster{{name: "", reachable: true}}
	var insts []v1alpha1.ExtensionInstallation
	for c := range clusters {
		name := fmt.Sprintf("cluster-%04d", c)
		cs = append(cs, cluster{name: name, labels: map[string]string{"fleet": "sim"}, version: "v1.37.1", reachable: true,
			defaults: map[string][]string{p.Name: nil}, record: clusterRecord{Revision: 1, Move: 1, At: time.Now()}, hasRecord: true})
		for _, ext := range p.Spec.Extensions {
			in := v1alpha1.ExtensionInstallation{
				ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: fleet.InstallationName(ext.Name, name), Generation: 1,
					Labels:      map[string]string{v1alpha1.LabelProfile: p.Name, v1alpha1.LabelProfileCluster: name, v1alpha1.LabelProfileRevision: "1"},
					Annotations: map[string]string{v1alpha1.AnnotationProfileMove: "1"}},
				Spec: v1alpha1.ExtensionInstallationSpec{Extension: ext.Name, Version: ext.Version, Cluster: name},
			}
			in.Spec.Upgrade.AllowDowngrade = true
			meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
				Reason: v1alpha1.ReasonSucceeded, ObservedGeneration: 1})
			insts = append(insts, in)
		}
	}
	data := map[int64]*v1alpha1.ProfileRevisionData{1: wantedRevision(p, nil)}
	view := revisionView{data: data, now: time.Now(), adopt: 1, newest: 1, memo: versionMemo{}}
	return p, cs, insts, view
}

// BenchmarkDecideFleet is the pure part of one reconcile of a converged
// profile at fleet size: observe, rollout.Decide and decide. The
// profile reconciles on every change of one of its installations, so
// this is paid per event (make bench-fleet's version bump is about a
// thousand of them).
func BenchmarkDecideFleet(b *testing.B) {
	for _, size := range []struct{ clusters, extensions int }{{100, 10}, {1000, 10}} {
		b.Run(fmt.Sprintf("C%d-E%d", size.clusters, size.extensions), func(b *testing.B) {
			p, clusters, insts, view := fleetInputs(size.clusters, size.extensions)
			all := []v1alpha1.ExtensionProfile{*p}
			b.ReportAllocs()
			for b.Loop() {
				v := view
				v.memo = versionMemo{}
				views := observe(p, all, clusters, insts, v, 1, func(cluster) (rollout.WindowState, error) { return rollout.WindowState{Open: true}, nil })
				ro := rollout.Decide(rollout.Input{Profile: p.Name, Now: v.now, Revision: 1, Clusters: views})
				v.moves = map[string]int64{}
				for _, m := range ro.Moves {
					v.moves[m.Cluster] = m.To
				}
				if decided := decide(p, all, clusters, insts, v); len(decided.actions) != 0 {
					b.Fatalf("a converged profile decides %d actions, first %+v", len(decided.actions), decided.actions[0])
				}
			}
		})
	}
}
