package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/shard"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// shardsNS holds the test's installations and kubeconfig Secret on the
// hub, and what they install on the member; leaseNS the managers' Leases.
const (
	shardsNS = "shards"
	leaseNS  = "annex-system"
)

// TestShards runs two shards of `annex manager` on one hub — the default
// shard and shard a, with two replicas — over two ManagedClusters that
// point at one member API server:
//
//  1. with only the default shard running, its cluster is served and
//     installed, and shard a's cluster is left alone (nobody serves it,
//     its installation is never reconciled, nothing of it on the member);
//  2. shard a, started, claims its cluster and installs it; the default
//     shard's cluster stays the default shard's;
//  3. shard a's leader SIGKILLed, its standby takes the Lease and
//     reconciles (an upgrade the dead leader never saw);
//  4. shard a's cluster relabelled to the default shard while shard a's
//     leader is killed in the middle of the handover (after its work on
//     the cluster ended, before it released it): the cluster stays shard
//     a's until the default shard sees shard a's Lease expire and takes it
//     over, with nothing applied again and nothing orphaned; shard a,
//     restarted, leaves it alone, and the default shard serves it (a
//     downgrade);
//  5. relabelled back to shard a with both shards running: the default
//     shard releases it, shard a claims it, nothing is applied again;
//  6. relabelled to the default shard again while shard a's leader dies
//     in the handover and is restarted at once: the restarted shard
//     releases the cluster, the default shard claims it, nothing is
//     applied again or orphaned.
//
// Which way each handover went is read from a watch of status.shard:
// a release leaves it empty for a moment, a takeover does not.
func TestShards(t *testing.T) {
	ctx := context.Background()
	hub, member := testenv.Start(t), testenv.Start(t)
	work := t.TempDir()
	kubeconfig, memberKubeconfig := filepath.Join(work, "kubeconfig"), filepath.Join(work, "member.kubeconfig")
	must(t, hub.WriteKubeconfig(kubeconfig))
	must(t, member.WriteKubeconfig(memberKubeconfig))
	memberConfig, err := os.ReadFile(memberKubeconfig)
	must(t, err)
	repo := helmrepo.NewServer(t, rolloutChart("app", "1.0.0"), rolloutChart("app", "1.1.0"))
	must(t, member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardsNS}}))
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardsNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: shardsNS, Name: "member"}, Data: map[string][]byte{"kubeconfig": memberConfig}},
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: shardsNS}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}},
	} {
		must(t, hub.Client.Create(ctx, o))
	}
	c := hub.Client
	served := watchServing(t, hub, "c-a")
	elect := []string{"--leader-elect", "--leader-election-namespace", leaseNS}
	def := newManagerProcess(t, work, kubeconfig)
	def.args = elect
	a1 := def.sibling("shard-a-1", "--shard", "a")
	a2 := def.sibling("shard-a-2", "--shard", "a")

	// 1. The default shard alone. Shard a's cluster and installation
	// come first, so that the default shard has seen them all along.
	def.start()
	awaitExtension(t, c, "app", 2)
	for _, mc := range []struct{ name, shard string }{{"c-a", "a"}, {"c-default", ""}} {
		cl := &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: mc.name},
			Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: shardsNS, Name: "member", Key: "kubeconfig"}}}
		if mc.shard != "" {
			cl.Labels = map[string]string{v1alpha1.LabelShard: mc.shard}
		}
		must(t, c.Create(ctx, cl))
		must(t, c.Create(ctx, &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: shardsNS, Name: "app-" + strings.TrimPrefix(mc.name, "c-")},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: "app", Version: "1.0.0", Cluster: mc.name, TargetNamespace: shardsNS,
				Upgrade: v1alpha1.UpgradePolicy{AllowDowngrade: true}},
		}))
	}
	awaitServed(t, c, "c-default", shard.Default)
	awaitInstalled(t, c, member.Client, "app-default", "1.0.0")
	appDefault := &v1alpha1.ExtensionInstallation{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: shardsNS, Name: "app-default"}, appDefault))
	appDefaultObjects := memberObjectsOf(t, member.Client, "app-default")
	untouched := &v1alpha1.ExtensionInstallation{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: shardsNS, Name: "app-a"}, untouched))
	if len(untouched.Status.Conditions) > 0 || untouched.Status.ObservedGeneration != 0 {
		t.Fatalf("the default shard reconciled app-a of shard a's cluster: %+v", untouched.Status)
	}
	if objs := memberObjectsOf(t, member.Client, "app-a"); len(objs) > 0 {
		t.Fatalf("the default shard installed app-a of shard a's cluster: %v", objs)
	}
	if got := servedBy(t, c, "c-a"); got != "" {
		t.Fatalf("c-a is served by %q with no manager of shard a running", got)
	}

	// 2. Shard a claims its cluster and installs it; its second replica
	// waits for the Lease.
	a1.start()
	awaitServed(t, c, "c-a", "a")
	awaitInstalled(t, c, member.Client, "app-a", "1.0.0")
	leader := leaseHolder(t, c, "a")
	// The standby is armed to die in step 4, in the middle of the
	// handover.
	a2.start(failpoint.Env(failpoint.ShardBeforeRelease, "", "c-a", 1))
	if got := servedBy(t, c, "c-default"); got != shard.Default {
		t.Fatalf("c-default is served by %q after shard a started, want %q", got, shard.Default)
	}

	// 3. The leader of shard a killed, its standby takes over the Lease
	// and upgrades app-a.
	a1.kill()
	setVersion(t, c, "app-a", "1.1.0")
	awaitLeader(t, c, "a", leader)
	awaitInstalled(t, c, member.Client, "app-a", "1.1.0")

	// 4. Relabelled to the default shard while shard a's leader dies in
	// the handover: it has stopped its work on c-a and not released it.
	before := &v1alpha1.ExtensionInstallation{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: shardsNS, Name: "app-a"}, before))
	objectsBefore := memberObjectsOf(t, member.Client, "app-a")
	setShard(t, c, "c-a", "")
	if !a2.awaitDeath(2 * time.Minute) {
		t.Fatal("shard a's leader did not reach the failpoint before its release of c-a")
	}
	if got := servedBy(t, c, "c-a"); got != "a" {
		t.Fatalf("c-a is served by %q after shard a died before releasing it, want a", got)
	}
	mark := served.mark()
	// With no manager of shard a left, the default shard takes c-a over
	// once shard a's Lease has expired. Shard a, restarted then, finds it
	// no longer its own and leaves it alone.
	awaitServed(t, c, "c-a", shard.Default)
	if got := served.since(mark); fmt.Sprint(got) != "[a default]" {
		t.Errorf("c-a was served by %q during the takeover, want a straight move from a to default", got)
	}
	a2.start()
	after := &v1alpha1.ExtensionInstallation{}
	testenv.Eventually(t, time.Minute, func() error {
		must(t, c.Get(ctx, client.ObjectKey{Namespace: shardsNS, Name: "app-a"}, after))
		if !meta.IsStatusConditionTrue(after.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("app-a is not Ready after the handover: %+v", after.Status.Conditions)
		}
		return nil
	})
	if len(after.Status.History) != len(before.Status.History) || after.Status.History[0].Number != before.Status.History[0].Number ||
		!after.Status.History[0].AppliedAt.Equal(&before.Status.History[0].AppliedAt) {
		t.Errorf("app-a was applied again by the handover: history %+v, before %+v", after.Status.History, before.Status.History)
	}
	if objectsAfter := memberObjectsOf(t, member.Client, "app-a"); fmt.Sprint(objectsAfter) != fmt.Sprint(objectsBefore) {
		t.Errorf("app-a's objects on the member changed in the handover: %v, before %v", objectsAfter, objectsBefore)
	}
	if problems := orphansAcross(ctx, c, member.Client, shardsNS); len(problems) > 0 {
		t.Fatalf("orphaned or duplicated objects on the member:\n%s", strings.Join(problems, "\n"))
	}

	// The default shard serves c-a now: it downgrades app-a, once.
	setVersion(t, c, "app-a", "1.0.0")
	awaitInstalled(t, c, member.Client, "app-a", "1.0.0")
	downgraded := &v1alpha1.ExtensionInstallation{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: shardsNS, Name: "app-a"}, downgraded))
	if n := len(downgraded.Status.History); n != len(before.Status.History)+1 {
		t.Errorf("app-a has %d revisions after the downgrade, want %d: %+v", n, len(before.Status.History)+1, downgraded.Status.History)
	}

	// 5. Relabelled back to shard a, both shards alive: the default shard
	// releases c-a, shard a claims it, and nothing is applied again.
	objectsBefore = memberObjectsOf(t, member.Client, "app-a")
	mark = served.mark()
	setShard(t, c, "c-a", "a")
	awaitServed(t, c, "c-a", "a")
	if got := served.since(mark); fmt.Sprint(got) != "[default  a]" {
		t.Errorf("c-a was served by %q in the move back, want default, nobody, a", got)
	}
	awaitInstalled(t, c, member.Client, "app-a", "1.0.0")
	back := &v1alpha1.ExtensionInstallation{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: shardsNS, Name: "app-a"}, back))
	if back.Status.History[0].Number != downgraded.Status.History[0].Number || !back.Status.History[0].AppliedAt.Equal(&downgraded.Status.History[0].AppliedAt) {
		t.Errorf("app-a was applied again by the move back to shard a: history %+v, before %+v", back.Status.History, downgraded.Status.History)
	}
	if objectsAfter := memberObjectsOf(t, member.Client, "app-a"); fmt.Sprint(objectsAfter) != fmt.Sprint(objectsBefore) {
		t.Errorf("app-a's objects on the member changed in the move back: %v, before %v", objectsAfter, objectsBefore)
	}
	if problems := orphansAcross(ctx, c, member.Client, shardsNS); len(problems) > 0 {
		t.Fatalf("orphaned or duplicated objects on the member:\n%s", strings.Join(problems, "\n"))
	}

	// 6. Relabelled to the default shard again while shard a's leader
	// dies in the handover, and restarted at once (without leader
	// election, so that it need not wait for its Lease): with nothing
	// under way, it releases c-a on its first reconcile of it, before the
	// default shard could take it over.
	a2.kill()
	a2.start(failpoint.Env(failpoint.ShardBeforeRelease, "", "c-a", 1))
	awaitLeader(t, c, "a", leaseHolder(t, c, "a"))
	mark = served.mark()
	setShard(t, c, "c-a", "")
	if !a2.awaitDeath(2 * time.Minute) {
		t.Fatal("shard a's leader did not reach the failpoint before its release of c-a")
	}
	a3 := &managerProcess{t: t, binary: def.binary, kubeconfig: kubeconfig, log: a2.log, args: []string{"--shard", "a"}, cacheDir: a2.cacheDir}
	a3.start()
	t.Cleanup(a3.kill)
	awaitServed(t, c, "c-a", shard.Default)
	if got := served.since(mark); fmt.Sprint(got) != "[a  default]" {
		t.Errorf("c-a was served by %q in the handover after shard a's restart, want a, nobody, default", got)
	}
	awaitInstalled(t, c, member.Client, "app-a", "1.0.0")
	if objectsAfter := memberObjectsOf(t, member.Client, "app-a"); fmt.Sprint(objectsAfter) != fmt.Sprint(objectsBefore) {
		t.Errorf("app-a's objects on the member changed in the last handover: %v, before %v", objectsAfter, objectsBefore)
	}
	last := &v1alpha1.ExtensionInstallation{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: shardsNS, Name: "app-a"}, last))
	if last.Status.History[0].Number != downgraded.Status.History[0].Number || !last.Status.History[0].AppliedAt.Equal(&downgraded.Status.History[0].AppliedAt) {
		t.Errorf("app-a was applied again by the last handover: history %+v, before %+v", last.Status.History, downgraded.Status.History)
	}
	if problems := orphansAcross(ctx, c, member.Client, shardsNS); len(problems) > 0 {
		t.Fatalf("orphaned or duplicated objects on the member:\n%s", strings.Join(problems, "\n"))
	}
	// The default shard's cluster went through all this untouched.
	if got := servedBy(t, c, "c-default"); got != shard.Default {
		t.Fatalf("c-default is served by %q at the end, want %q", got, shard.Default)
	}
	end := &v1alpha1.ExtensionInstallation{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: shardsNS, Name: "app-default"}, end))
	if len(end.Status.History) != 1 || !end.Status.History[0].AppliedAt.Equal(&appDefault.Status.History[0].AppliedAt) {
		t.Errorf("app-default was applied again: history %+v, first %+v", end.Status.History, appDefault.Status.History)
	}
	if objs := memberObjectsOf(t, member.Client, "app-default"); fmt.Sprint(objs) != fmt.Sprint(appDefaultObjects) {
		t.Errorf("app-default's objects on the member changed: %v, first %v", objs, appDefaultObjects)
	}
}

// setShard labels a ManagedCluster for shard name ("" removes the label).
func setShard(t *testing.T, c client.Client, cluster, name string) {
	t.Helper()
	mc := &v1alpha1.ManagedCluster{}
	must(t, c.Get(context.Background(), client.ObjectKey{Name: cluster}, mc))
	patch := client.MergeFrom(mc.DeepCopy())
	if name == "" {
		delete(mc.Labels, v1alpha1.LabelShard)
	} else {
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		mc.Labels[v1alpha1.LabelShard] = name
	}
	must(t, c.Patch(context.Background(), mc, patch))
}

// awaitLeader waits until a shard's Lease is held by someone other than
// old.
func awaitLeader(t *testing.T, c client.Client, name, old string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, func() error {
		if h := leaseHolder(t, c, name); h == old || h == "" {
			return fmt.Errorf("shard %s's Lease is held by %q still", name, h)
		}
		return nil
	})
}

// servingWatch records every value a ManagedCluster's status.shard took,
// as a watch of the hub saw them ("" while nobody served it).
type servingWatch struct {
	mu   sync.Mutex
	seen []string
}

func watchServing(t *testing.T, hub *testenv.Env, cluster string) *servingWatch {
	t.Helper()
	wc, err := client.NewWithWatch(hub.Config, client.Options{Scheme: hub.Scheme})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &v1alpha1.ManagedClusterList{}, client.MatchingFields{"metadata.name": cluster})
	must(t, err)
	sw := &servingWatch{}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if mc, ok := ev.Object.(*v1alpha1.ManagedCluster); ok && ev.Type != watch.Deleted {
				sw.mu.Lock()
				if len(sw.seen) == 0 || sw.seen[len(sw.seen)-1] != mc.Status.Shard {
					sw.seen = append(sw.seen, mc.Status.Shard)
				}
				sw.mu.Unlock()
			}
		}
	}()
	return sw
}

// mark is where the values seen from now on begin; the last value seen
// before is included.
func (w *servingWatch) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(len(w.seen)-1, 0)
}

// since returns the values seen from mark on.
func (w *servingWatch) since(mark int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.seen[mark:]...)
}

// awaitExtension waits until the catalog offers n versions of name.
func awaitExtension(t *testing.T, c client.Client, name string, n int) {
	t.Helper()
	testenv.Eventually(t, 3*time.Minute, func() error {
		ext := &v1alpha1.Extension{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, ext); err != nil {
			return err
		}
		if len(ext.Spec.Versions) != n {
			return fmt.Errorf("extension %s has %d versions, want %d", name, len(ext.Spec.Versions), n)
		}
		return nil
	})
}

func servedBy(t *testing.T, c client.Client, cluster string) string {
	t.Helper()
	mc := &v1alpha1.ManagedCluster{}
	must(t, c.Get(context.Background(), client.ObjectKey{Name: cluster}, mc))
	return mc.Status.Shard
}

func awaitServed(t *testing.T, c client.Client, cluster, want string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, func() error {
		if got := servedBy(t, c, cluster); got != want {
			return fmt.Errorf("%s is served by %q, want %q", cluster, got, want)
		}
		return nil
	})
}

// awaitInstalled waits until the installation is Ready at version and the
// member holds its ConfigMap of that version and no other.
func awaitInstalled(t *testing.T, hub, member client.Client, name, version string) {
	t.Helper()
	testenv.Eventually(t, 2*time.Minute, func() error {
		inst := &v1alpha1.ExtensionInstallation{}
		if err := hub.Get(context.Background(), client.ObjectKey{Namespace: shardsNS, Name: name}, inst); err != nil {
			return err
		}
		if inst.Status.InstalledVersion != version || !meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) ||
			inst.Status.ObservedGeneration != inst.Generation {
			return fmt.Errorf("%s: installed %q, want %q Ready; conditions %+v", name, inst.Status.InstalledVersion, version, inst.Status.Conditions)
		}
		if objs := memberObjectsOf(t, member, name); len(objs) != 1 || !strings.HasPrefix(objs[0], "ConfigMap/"+name+"-"+version+"@") {
			return fmt.Errorf("%s: the member holds %v, want its ConfigMap of %s alone", name, objs, version)
		}
		return nil
	})
}

// memberObjectsOf lists the ConfigMaps of an installation on the member
// as "ConfigMap/<name>@<resourceVersion>".
func memberObjectsOf(t *testing.T, member client.Client, inst string) []string {
	t.Helper()
	var list corev1.ConfigMapList
	must(t, member.List(context.Background(), &list, client.InNamespace(shardsNS), client.MatchingLabels{v1alpha1.LabelInstallationName: inst}))
	var out []string
	for _, cm := range list.Items {
		out = append(out, "ConfigMap/"+cm.Name+"@"+cm.ResourceVersion)
	}
	return out
}

func setVersion(t *testing.T, c client.Client, name, version string) {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{}
	must(t, c.Get(context.Background(), client.ObjectKey{Namespace: shardsNS, Name: name}, inst))
	patch := client.MergeFrom(inst.DeepCopy())
	inst.Spec.Version = version
	must(t, c.Patch(context.Background(), inst, patch))
}

// leaseHolder is the identity holding a shard's Lease ("" for none).
func leaseHolder(t *testing.T, c client.Client, name string) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: leaseNS, Name: shard.LeaseName(name)}, lease); err != nil {
		return ""
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}
