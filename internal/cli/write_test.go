package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

// minimal writes what install checks: a namespace, the podinfo extension
// (6.5.0 and 6.4.0) and the ManagedCluster prod-eu.
func minimal(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "podinfo"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			{Version: "6.5.0", Source: v1alpha1.ArtifactSource{URL: "https://charts.example.com/podinfo-6.5.0.tgz"}},
			{Version: "6.4.0", Source: v1alpha1.ArtifactSource{URL: "https://charts.example.com/podinfo-6.4.0.tgz"}},
		}}},
		&v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod-eu"}, Spec: v1alpha1.ManagedClusterSpec{
			KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Name: "kc", Namespace: "team-a"}}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// install --dry-run -o yaml prints an ExtensionInstallation that the API
// server takes back as it is; install refuses, naming the fix, an
// unknown extension, a range no version matches, an unknown cluster and
// an installation that exists.
func TestInstall(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	minimal(t, env.Client)
	o := cli.InstallOptions{
		Extension: "podinfo", Namespace: "team-a", Version: "^6.4", Cluster: "prod-eu", TargetNamespace: "web",
		Values: [][]byte{[]byte("image:\n  tag: 6.5.0\nreplicaCount: 1\n"), []byte("replicaCount: 2\n")},
		Set:    []string{"replicaCount=3", "ingress.enabled=true", "ingress.hosts[0]=web.example.com"},
		DryRun: true,
	}
	inst, err := cli.Install(ctx, env.Client, o)
	if err != nil {
		t.Fatal(err)
	}
	var list v1alpha1.ExtensionInstallationList
	if err := env.Client.List(ctx, &list); err != nil || len(list.Items) != 0 {
		t.Fatalf("a dry run wrote %d installations (%v)", len(list.Items), err)
	}
	var out bytes.Buffer
	if err := cli.WriteObject(&out, cli.OutputYAML, inst, "created"); err != nil {
		t.Fatal(err)
	}
	golden(t, "cli/install-dry-run.yaml", out.Bytes())

	// Round trip: what was printed is created as it is, and every field
	// it printed reads back unchanged.
	printed := &v1alpha1.ExtensionInstallation{}
	if err := yaml.UnmarshalStrict(out.Bytes(), printed); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, printed); err != nil {
		t.Fatalf("creating what --dry-run -o yaml printed: %v", err)
	}
	back := &v1alpha1.ExtensionInstallation{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "podinfo"}, back); err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	if err := yaml.Unmarshal(out.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	if err := roundTripJSON(back, &got); err != nil {
		t.Fatal(err)
	}
	if !subset(want["spec"], got["spec"]) {
		t.Errorf("spec read back differs from the printed one:\nprinted %v\nread    %v", want["spec"], got["spec"])
	}
	var values map[string]any
	if err := json.Unmarshal(back.Spec.Values.Raw, &values); err != nil {
		t.Fatal(err)
	}
	wantValues := map[string]any{"image": map[string]any{"tag": "6.5.0"}, "replicaCount": float64(3),
		"ingress": map[string]any{"enabled": true, "hosts": []any{"web.example.com"}}}
	if !reflect.DeepEqual(values, wantValues) {
		t.Errorf("values: %v, want %v (files merged in order, then --set)", values, wantValues)
	}

	for _, c := range []struct {
		name string
		o    cli.InstallOptions
		want string
		code int
	}{
		// an extension no catalog has
		{"unknown extension", cli.InstallOptions{Extension: "nginx", Namespace: "team-a"},
			`extension "nginx" not found in any catalog; run "annexctl search nginx" or "annexctl catalog list"`, cli.ExitError},
		// a range none of its versions match
		{"no version", cli.InstallOptions{Extension: "podinfo", Name: "p2", Namespace: "team-a", Version: "^9"},
			`no version of extension "podinfo" matches --version "^9"; its versions: 6.5.0, 6.4.0 (see annexctl show podinfo)`, cli.ExitError},
		// not a range at all
		{"bad range", cli.InstallOptions{Extension: "podinfo", Name: "p2", Namespace: "team-a", Version: "latest"},
			`--version "latest" is not a version range`, cli.ExitUsage},
		// a cluster that is not registered
		{"unknown cluster", cli.InstallOptions{Extension: "podinfo", Name: "p2", Namespace: "team-a", Cluster: "prod-us"},
			`no ManagedCluster "prod-us"; registered clusters: prod-eu (annexctl status lists them)`, cli.ExitError},
		// an installation of that name exists
		{"exists", cli.InstallOptions{Extension: "podinfo", Namespace: "team-a"},
			`ExtensionInstallation team-a/podinfo exists already; change it with annexctl upgrade podinfo -n team-a, or pass --name`, cli.ExitError},
		// a --set without =
		{"bad set", cli.InstallOptions{Extension: "podinfo", Namespace: "team-a", Set: []string{"replicaCount"}},
			`--set "replicaCount": use key=value`, cli.ExitUsage},
	} {
		_, err := cli.Install(ctx, env.Client, c.o)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || cli.ExitCode(err) != c.code {
			t.Errorf("%s: %v (exit %d), want %q (exit %d)", c.name, err, cli.ExitCode(err), c.want, c.code)
		}
	}
}

// roundTripJSON converts v into out through JSON.
func roundTripJSON(v, out any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// subset reports whether every field of a is in b with the same value.
func subset(a, b any) bool {
	am, ok := a.(map[string]any)
	if !ok {
		return reflect.DeepEqual(normalize(a), normalize(b))
	}
	bm, ok := b.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range am {
		if !subset(v, bm[k]) {
			return false
		}
	}
	return true
}

func normalize(v any) any {
	var out any
	data, _ := json.Marshal(v)
	_ = json.Unmarshal(data, &out)
	return out
}

// upgrade changes the range and merges values over the installation's;
// uninstall deletes it and names what depends on it.
func TestUpgradeUninstall(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	minimal(t, env.Client)
	if _, err := cli.Install(ctx, env.Client, cli.InstallOptions{Extension: "podinfo", Namespace: "team-a",
		Values: [][]byte{[]byte("image:\n  tag: a\n")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Upgrade(ctx, env.Client, cli.UpgradeOptions{Name: "podinfo", Namespace: "team-a"}); cli.ExitCode(err) != cli.ExitUsage {
		t.Errorf("an upgrade that changes nothing: %v, want a usage error", err)
	}
	if _, err := cli.Upgrade(ctx, env.Client, cli.UpgradeOptions{Name: "podinfo", Namespace: "team-a", Version: "^7"}); err == nil ||
		!strings.Contains(err.Error(), `no version of extension "podinfo" matches --version "^7"`) {
		t.Errorf("an upgrade to a range without versions: %v", err)
	}
	if _, err := cli.Upgrade(ctx, env.Client, cli.UpgradeOptions{Name: "podinfo", Namespace: "team-a", Version: "6.4.0", Set: []string{"replicaCount=5"}}); err != nil {
		t.Fatal(err)
	}
	read := func() *v1alpha1.ExtensionInstallation {
		inst := &v1alpha1.ExtensionInstallation{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "podinfo"}, inst); err != nil {
			t.Fatal(err)
		}
		return inst
	}
	inst := read()
	if inst.Spec.Version != "6.4.0" || string(inst.Spec.Values.Raw) != `{"image":{"tag":"a"},"replicaCount":5}` {
		t.Errorf("after upgrade: version %q values %s", inst.Spec.Version, inst.Spec.Values.Raw)
	}
	if _, err := cli.Upgrade(ctx, env.Client, cli.UpgradeOptions{Name: "podinfo", Namespace: "team-a", ResetValues: true, Set: []string{"a=b"}}); err != nil {
		t.Fatal(err)
	}
	if got := string(read().Spec.Values.Raw); got != `{"a":"b"}` {
		t.Errorf("after --reset-values: %s", got)
	}
	if _, err := cli.Upgrade(ctx, env.Client, cli.UpgradeOptions{Name: "nope", Namespace: "team-a", Version: "*"}); err == nil ||
		!strings.Contains(err.Error(), "no ExtensionInstallation team-a/nope") {
		t.Errorf("upgrade of a missing installation: %v", err)
	}

	inst = read()
	inst.Status.RequiredBy = []string{"team-a/web"}
	if err := env.Client.Status().Update(ctx, inst); err != nil {
		t.Fatal(err)
	}
	requiredBy, err := cli.Uninstall(ctx, env.Client, "team-a", "podinfo")
	if err != nil || !reflect.DeepEqual(requiredBy, []string{"team-a/web"}) {
		t.Fatalf("uninstall: %v %v", requiredBy, err)
	}
	// The API server gave the installation the uninstall finalizer; no
	// manager runs here to remove it once the objects are gone.
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "podinfo"}, inst); err != nil || inst.DeletionTimestamp.IsZero() {
		t.Errorf("after uninstall: want the installation being deleted, got %v (err %v)", inst.DeletionTimestamp, err)
	}
	releaseFinalizer(t, env.Client, "team-a", "podinfo")
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "podinfo"}, inst); !apierrors.IsNotFound(err) {
		t.Errorf("after uninstall and the finalizer's release: %v", err)
	}
	if _, err := cli.Uninstall(ctx, env.Client, "team-a", "podinfo"); err == nil || !strings.Contains(err.Error(), "no ExtensionInstallation team-a/podinfo") {
		t.Errorf("uninstall of a missing installation: %v", err)
	}
}

// catalog add builds the source from its form, sync asks for a sync by
// annotation, remove deletes.
func TestCatalogCommands(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	for _, c := range []struct {
		o    cli.CatalogOptions
		want v1alpha1.CatalogSource
	}{
		{cli.CatalogOptions{Name: "a", Source: "https://charts.example.com", Secret: "ns/creds"},
			v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: "https://charts.example.com", SecretRef: &v1alpha1.SecretReference{Namespace: "ns", Name: "creds"}}}},
		{cli.CatalogOptions{Name: "b", Source: "oci://registry.example.com/charts"},
			v1alpha1.CatalogSource{OCI: &v1alpha1.OCISource{Repository: "oci://registry.example.com/charts"}}},
		{cli.CatalogOptions{Name: "c", Source: "/srv/charts"}, v1alpha1.CatalogSource{Directory: &v1alpha1.DirectorySource{Path: "/srv/charts"}}},
		{cli.CatalogOptions{Name: "d", Source: "builtin"}, v1alpha1.CatalogSource{Builtin: &v1alpha1.BuiltinSource{}}},
		{cli.CatalogOptions{Name: "e", Source: "quay.io/operatorhubio/catalog:latest", OLM: true},
			v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{Image: "quay.io/operatorhubio/catalog:latest"}}},
		{cli.CatalogOptions{Name: "f", Source: "https://example.com/catalog.json", OLM: true},
			v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{URL: "https://example.com/catalog.json"}}},
	} {
		cat, err := cli.AddCatalog(ctx, env.Client, c.o)
		if err != nil {
			t.Fatalf("%s: %v", c.o.Source, err)
		}
		if !reflect.DeepEqual(cat.Spec.Source, c.want) {
			t.Errorf("%s: source %+v, want %+v", c.o.Source, cat.Spec.Source, c.want)
		}
	}
	if _, err := cli.AddCatalog(ctx, env.Client, cli.CatalogOptions{Name: "x", Source: "ftp://old"}); cli.ExitCode(err) != cli.ExitUsage ||
		!strings.Contains(err.Error(), `source "ftp://old" of catalog "x": use an https:// Helm repository`) {
		t.Errorf("an unknown source: %v", err)
	}
	if _, err := cli.AddCatalog(ctx, env.Client, cli.CatalogOptions{Name: "a", Source: "builtin"}); err == nil ||
		!strings.Contains(err.Error(), `catalog "a" exists already`) {
		t.Errorf("adding an existing catalog: %v", err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if request, err := cli.SyncCatalog(ctx, env.Client, "a", at); err != nil || request != "2026-03-01T12:00:00Z" {
		t.Fatalf("SyncCatalog: %q, %v", request, err)
	}
	cat := &v1alpha1.Catalog{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "a"}, cat); err != nil {
		t.Fatal(err)
	}
	if got := cat.Annotations[v1alpha1.AnnotationSyncRequestedAt]; got != "2026-03-01T12:00:00Z" {
		t.Errorf("sync annotation %q", got)
	}
	if err := cli.RemoveCatalog(ctx, env.Client, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.SyncCatalog(ctx, env.Client, "a", at); err == nil || err.Error() != `no catalog "a"; list them with annexctl catalog list` {
		t.Errorf("sync of a removed catalog: %v", err)
	}
	names, err := cli.CatalogNames(ctx, env.Client)
	if err != nil || strings.Join(names, ",") != "b,c,d,e,f" {
		t.Errorf("catalog names %v %v", names, err)
	}
}

// Wait follows the stages as Annex writes them, and ends with the exit
// code scripts branch on.
func TestWait(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	minimal(t, env.Client)
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	install := func(name string) *v1alpha1.ExtensionInstallation {
		inst, err := cli.Install(ctx, env.Client, cli.InstallOptions{Extension: "podinfo", Name: name, Namespace: "team-a"})
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	// writeStatus sets the installation's conditions (and plans) as
	// Annex would.
	writeStatus := func(name string, plans []v1alpha1.PlanStatus, conds ...metav1.Condition) {
		inst := &v1alpha1.ExtensionInstallation{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: name}, inst); err != nil {
			t.Error(err)
			return
		}
		for i := range conds {
			conds[i].ObservedGeneration = inst.Generation
		}
		inst.Status.Conditions, inst.Status.Plans = conds, plans
		if err := env.Client.Status().Update(ctx, inst); err != nil {
			t.Error(err)
		}
	}
	plan := func(done int) []v1alpha1.PlanStatus {
		steps := []v1alpha1.StepStatus{{Name: "crds", State: v1alpha1.PlanPending}, {Name: "app", State: v1alpha1.PlanPending}}
		for i := 0; i < done; i++ {
			steps[i].State = v1alpha1.PlanComplete
		}
		return []v1alpha1.PlanStatus{{Name: "install", State: v1alpha1.PlanInProgress, Phases: []v1alpha1.PhaseStatus{{Name: "apply", State: v1alpha1.PlanInProgress, Steps: steps}}}}
	}

	// The way to Ready: every change of progress is reported once, and
	// the next status is written only after the last was seen, so the
	// sequence is the one Annex wrote.
	install("web")
	next := []func(){
		func() {
			writeStatus("web", nil, cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonDependencyNotReady, "cert-manager ^1.14: not installed"))
		},
		func() {
			writeStatus("web", plan(0), cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPlanRunning, "applying"))
		},
		func() {
			writeStatus("web", plan(1), cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPlanRunning, "applying"))
		},
		func() {
			writeStatus("web", nil, cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonWaitingForHealth, "Deployment team-a/web: 0/1 available"))
		},
		func() {
			writeStatus("web", nil, cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "podinfo 6.5.0 is installed and healthy"))
		},
	}
	var plain bytes.Buffer
	printer := cli.NewProgressPrinter(&plain, false)
	p, err := cli.Wait(ctx, wc, cli.WaitOptions{Namespace: "team-a", Name: "web", Timeout: time.Minute, OnProgress: func(p cli.Progress) {
		printer.Print(p)
		if len(next) > 0 {
			step := next[0]
			next = next[1:]
			go step()
		}
	}})
	if err != nil || p.State != cli.ProgressDone {
		t.Fatalf("wait: %+v %v", p, err)
	}
	golden(t, "cli/wait-plain.txt", plain.Bytes())

	// The same progress on a terminal redraws one line.
	var tty bytes.Buffer
	pp := cli.NewProgressPrinter(&tty, true)
	pp.Print(cli.Progress{Stage: cli.StageApply, State: cli.ProgressWorking, Reason: v1alpha1.ReasonPlanRunning,
		Plan: &cli.PlanProgress{Name: "install", Done: 1, Total: 2, Phase: "apply", Step: "app"}})
	pp.Print(cli.Progress{Stage: cli.StageHealthy, State: cli.ProgressDone, Reason: v1alpha1.ReasonSucceeded})
	pp.Done()
	golden(t, "cli/wait-tty.txt", tty.Bytes())

	// A change that needs an approval ends the wait at once: 4.
	install("gated")
	writeStatus("gated", nil, cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonApprovalRequired, "install 6.5.0 needs an Approval"))
	_, err = cli.Wait(ctx, wc, cli.WaitOptions{Namespace: "team-a", Name: "gated", Timeout: time.Minute})
	if cli.ExitCode(err) != cli.ExitApprovalPending || !strings.Contains(err.Error(), "annexctl approve gated -n team-a") {
		t.Errorf("approval: %v (exit %d)", err, cli.ExitCode(err))
	}
	// A stalled installation: 1, with the condition's message.
	install("broken")
	writeStatus("broken", nil,
		cond(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonValuesInvalid, "values.replicaCount: must be >= 0"),
		cond(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonValuesInvalid, "values.replicaCount: must be >= 0"))
	_, err = cli.Wait(ctx, wc, cli.WaitOptions{Namespace: "team-a", Name: "broken", Timeout: time.Minute})
	if cli.ExitCode(err) != cli.ExitError || err.Error() != "team-a/broken stopped at render: ValuesInvalid: values.replicaCount: must be >= 0" {
		t.Errorf("stalled: %v (exit %d)", err, cli.ExitCode(err))
	}
	// Nothing happens before the timeout: 3.
	install("slow")
	_, err = cli.Wait(ctx, wc, cli.WaitOptions{Namespace: "team-a", Name: "slow", Timeout: 500 * time.Millisecond})
	var ec *cli.ExitCodeError
	if !errors.As(err, &ec) || ec.Code != cli.ExitNotReady || !strings.Contains(err.Error(), "team-a/slow was not Ready within 500ms: it is at resolve") {
		t.Errorf("timeout: %v", err)
	}
	// Waiting for deletion ends when the object is gone.
	done := make(chan error, 1)
	var uninstallOnce sync.Once
	go func() {
		_, err := cli.Wait(ctx, wc, cli.WaitOptions{Namespace: "team-a", Name: "slow", Timeout: time.Minute, Deleted: true,
			OnProgress: func(cli.Progress) {
				uninstallOnce.Do(func() {
					if _, err := cli.Uninstall(ctx, env.Client, "team-a", "slow"); err != nil {
						t.Error(err)
					}
					releaseFinalizer(t, env.Client, "team-a", "slow")
				})
			}})
		done <- err
	}()
	if err := <-done; err != nil {
		t.Errorf("wait for deletion: %v", err)
	}
}

// releaseFinalizer removes the uninstall finalizer the API server put on
// installation ns/name (policy annex-uninstall-finalizer), as the manager
// does once its objects are gone: no manager runs in these tests.
func releaseFinalizer(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := c.Patch(context.Background(), inst, patch); client.IgnoreNotFound(err) != nil {
		t.Error(err) // also called from a goroutine: not Fatal
	}
}
