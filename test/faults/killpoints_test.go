package faults

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// stage is one crash of a kill-point scenario: with the manager down, the
// test makes change (a version range, or "delete"), then starts the manager
// with crashAt armed for that installation and waits until it kills itself
// there.
type stage struct {
	change  string
	crashAt string
}

// killScenario starts from an installation Ready at 1.0.0 (whose 1.x
// rendering has a Secret that 2.0.0 drops, and 2.0.0 a ConfigMap that 1.x
// lacks), runs its stages, then starts the manager unarmed and expects the
// installation to settle as want says, with nothing orphaned.
type killScenario struct {
	name   string
	stages []stage
	// want is the range the installation ends at ("" = uninstalled);
	// reason, when set, is the terminal Ready=False reason it ends with,
	// and version the version it then runs.
	want, reason, version string
}

// killScenarios cover each kill point of the apply sequence at least once,
// alone and followed by a second crashed attempt at different content, and
// the takeovers of rollback and uninstall.
var killScenarios = []killScenario{
	// Two attempts die after writing their records, before any object.
	{name: "intent-intent", stages: []stage{{"2.x", failpoint.AfterIntent}, {"1.1.x", failpoint.AfterIntent}}, want: "1.1.x"},
	// The first attempt applied an object of 2.0.0; the second, for other
	// content, dies right after its record: the first record must survive.
	{name: "first-object-intent", stages: []stage{{"2.x", failpoint.AfterFirstObject}, {"1.1.x", failpoint.AfterIntent}}, want: "1.1.x"},
	// Every object of 2.0.0 applied, nothing pruned; then 1.1.0 dies mid-apply.
	{name: "objects-first-object", stages: []stage{{"2.x", failpoint.AfterObjects}, {"1.1.x", failpoint.AfterFirstObject}}, want: "1.1.x"},
	// 2.0.0 applied and announced, the status never written; 1.1.0 then
	// dies after its record. The second attempt must take a new revision
	// number: reusing revision 2 would overwrite the first's record and
	// leave 2.0.0's ConfigMap in no inventory.
	{name: "event-intent", stages: []stage{{"2.x", failpoint.AfterEvent}, {"1.1.x", failpoint.AfterIntent}}, want: "1.1.x"},
	// Done and about to write the status; then a downgrade dies mid-apply.
	{name: "status-objects", stages: []stage{{"2.x", failpoint.BeforeStatus}, {"1.0.x", failpoint.AfterObjects}}, want: "1.0.x"},
	// The upgrade to 2.0.0 prunes the Secret and dies after that delete.
	{name: "prune", stages: []stage{{"2.x", failpoint.DuringPrune}}, want: "2.x"},
	// Dies after the first delete of an uninstall.
	{name: "uninstall", stages: []stage{{"delete", failpoint.UninstallAfterFirstDelete}}, want: ""},
	// An upgrade dies after applying everything; the installation is
	// deleted while the manager is down: the uninstall removes what the
	// crashed upgrade applied too.
	{name: "uninstall-after-crashed-upgrade", stages: []stage{{"2.x", failpoint.AfterObjects}, {"delete", ""}}, want: ""},
	// A record in pieces: the first attempt dies between its index and its
	// pieces, the second (other content) after its record.
	{name: "pieces-intent", stages: []stage{{"4.x", failpoint.AfterRecordIndex}, {"1.1.x", failpoint.AfterIntent}}, want: "1.1.x"},
	// A record in pieces fully written, the objects applied; the status
	// never written.
	{name: "pieces-event", stages: []stage{{"4.x", failpoint.AfterEvent}}, want: "4.x"},
	// 3.0.0 fails every attempt and is rolled back; the rollback dies after
	// its record, and the next manager finishes the rollback.
	{name: "rollback", stages: []stage{{"3.x", failpoint.RollbackAfterIntent}}, want: "3.x", reason: v1alpha1.ReasonRolledBack, version: "1.0.0"},
}

// TestKillPoints crashes the manager at each chosen point of the apply
// sequence, then at a second point of a different attempt, and checks that
// the next manager converges with every object Annex applied in exactly
// one inventory. ANNEX_FAULT_REPEAT=n runs the scenarios n times (make
// test-faults does, under CPU contention).
func TestKillPoints(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	c := env.Client
	work := t.TempDir()
	kubeconfig := filepath.Join(work, "kubeconfig")
	must(t, env.WriteKubeconfig(kubeconfig))
	mgr := newManagerProcess(t, work, kubeconfig)

	const ns = "killpoints"
	repeat := repeatFromEnv()
	var charts []helmrepo.Chart
	for i := range len(killScenarios) * repeat {
		for _, v := range appVersions {
			charts = append(charts, app(fmt.Sprintf("kp-%02d", i), v))
		}
	}
	repo := helmrepo.NewServer(t, charts...)
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, c.Create(ctx, &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: "killpoints"},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}},
	}))

	for i := range len(killScenarios) * repeat {
		sc := killScenarios[i%len(killScenarios)]
		name := fmt.Sprintf("kp-%02d", i)
		t.Run(fmt.Sprintf("%s/%s", sc.name, name), func(t *testing.T) {
			mgr.t = t
			runKillScenario(t, ctx, c, mgr, ns, name, sc)
		})
		if t.Failed() {
			return
		}
	}
}

func runKillScenario(t *testing.T, ctx context.Context, c client.Client, mgr *managerProcess, ns, name string, sc killScenario) {
	mgr.start()
	must(t, c.Create(ctx, &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.ExtensionInstallationSpec{
			Extension: name, Version: "1.0.x",
			Upgrade: v1alpha1.UpgradePolicy{AllowDowngrade: true},
		},
	}))
	awaitInstallation(t, ctx, c, ns, name, "1.0.0", "")
	mgr.kill()

	for _, st := range sc.stages {
		changeInstallation(t, ctx, c, ns, name, st.change)
		if st.crashAt == "" {
			continue
		}
		mgr.start(failpoint.Env(st.crashAt, ns, name, 1))
		if !mgr.awaitDeath(2 * time.Minute) {
			mgr.kill()
			t.Fatalf("the manager never reached %s for %s/%s", st.crashAt, ns, name)
		}
	}
	mgr.start()
	defer mgr.kill()
	switch {
	case sc.want == "":
		awaitGone(t, ctx, c, ns, name)
	default:
		version := sc.version
		if version == "" {
			version = ranges[sc.want]
		}
		awaitInstallation(t, ctx, c, ns, name, version, sc.reason)
	}
	if problems := orphans(ctx, c, ns); len(problems) > 0 {
		t.Fatalf("orphaned or duplicated objects:\n%s", strings.Join(problems, "\n"))
	}
	if sc.want != "" {
		changeInstallation(t, ctx, c, ns, name, "delete")
		awaitGone(t, ctx, c, ns, name)
	}
	// Records and their pieces go with the installation.
	var secrets corev1.SecretList
	must(t, c.List(ctx, &secrets, client.InNamespace(ns)))
	for _, s := range secrets.Items {
		if s.Type == v1alpha1.RevisionSecretType || s.Type == v1alpha1.RecordPieceSecretType {
			t.Errorf("Secret %s (%s) is left after the uninstall", s.Name, s.Type)
		}
	}
}

// changeInstallation sets the installation's version range, or deletes it.
func changeInstallation(t *testing.T, ctx context.Context, c client.Client, ns, name, change string) {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, inst))
	if change == "delete" {
		must(t, c.Delete(ctx, inst))
		return
	}
	patch := client.MergeFrom(inst.DeepCopy())
	inst.Spec.Version = change
	must(t, c.Patch(ctx, inst, patch))
}

// awaitInstallation waits until the installation runs version for its
// current generation: Ready, or, with reason, Ready=False for that reason.
func awaitInstallation(t *testing.T, ctx context.Context, c client.Client, ns, name, version, reason string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		inst := &v1alpha1.ExtensionInstallation{}
		must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, inst))
		ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
		last = fmt.Sprintf("installed %q, generation %d/%d, Ready %v", inst.Status.InstalledVersion,
			inst.Status.ObservedGeneration, inst.Generation, ready)
		if ready != nil && ready.ObservedGeneration == inst.Generation && inst.Status.InstalledVersion == version {
			wantStatus := metav1.ConditionTrue
			if reason != "" {
				wantStatus = metav1.ConditionFalse
			}
			if ready.Status == wantStatus && (reason == "" || ready.Reason == reason) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s/%s: want %s (reason %q); %s", ns, name, version, reason, last)
}

func awaitGone(t *testing.T, ctx context.Context, c client.Client, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ExtensionInstallation{})
		if apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s/%s was not uninstalled within 2 minutes", ns, name)
}
