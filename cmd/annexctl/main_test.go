package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

// run executes annexctl with args and returns its output and exit code.
func run(t *testing.T, name string, args ...string) (string, int) {
	t.Helper()
	root := newRootCommand(name)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		out.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), exitCode(err)
}

// Completion scripts generate for every shell cobra supports, under
// both names.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		for _, name := range []string{"annexctl", "kubectl annex"} {
			out, code := run(t, name, "completion", shell)
			if code != 0 || !strings.Contains(out, "__complete") {
				t.Errorf("%s completion %s: exit %d, %d bytes without a call to __complete", name, shell, code, len(out))
			}
		}
	}
}

// Exit codes of the command line itself, and the plugin's name in usage.
func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"bogus"}, cli.ExitUsage},                                       // unknown command
		{[]string{"install"}, cli.ExitUsage},                                     // missing argument
		{[]string{"adopt", "helm"}, cli.ExitUsage},                               // missing release
		{[]string{"status", "--bogus"}, cli.ExitUsage},                           // unknown flag
		{[]string{"search", "-o", "xml"}, cli.ExitUsage},                         // bad -o
		{[]string{"version"}, cli.ExitOK},                                        // no server needed
		{[]string{"catalog", "add", "x", "ftp://y", "--dry-run"}, cli.ExitUsage}, // bad source
	} {
		if out, code := run(t, "annexctl", c.args...); code != c.code {
			t.Errorf("annexctl %s: exit %d, want %d\n%s", strings.Join(c.args, " "), code, c.code, out)
		}
	}
	// A dry run needs no server: the Catalog as kubectl apply takes it.
	if out, code := run(t, "annexctl", "catalog", "add", "builtin", "builtin", "--dry-run", "-o", "yaml"); code != 0 ||
		out != "apiVersion: annex.dev/v1alpha1\nkind: Catalog\nmetadata:\n  name: builtin\nspec:\n  source:\n    builtin: {}\n" {
		t.Errorf("catalog add --dry-run -o yaml: exit %d\n%s", code, out)
	}
	out, _ := run(t, "kubectl annex", "install", "--help")
	if !strings.Contains(out, "kubectl annex install EXTENSION") {
		t.Errorf("kubectl-annex usage does not say kubectl annex:\n%s", out)
	}
	if displayName("/usr/local/bin/kubectl-annex") != "kubectl annex" || displayName("bin/annexctl") != "annexctl" {
		t.Error("displayName")
	}
	out, _ = run(t, "annexctl", "--help")
	for _, code := range []string{"0  success", "2  usage", "3  --wait", "4  --wait"} {
		if !strings.Contains(out, code) {
			t.Errorf("--help does not document exit code %q", code)
		}
	}
}

// Against a real API server: __complete lists resource names, install
// --dry-run -o yaml prints what install then creates, and status prints
// the tree.
func TestCommandsAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
		&v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "podinfo"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			{Version: "6.5.0", Source: v1alpha1.ArtifactSource{URL: "https://charts.example.com/podinfo-6.5.0.tgz"}}}}},
		&v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "cert-manager"}, Spec: v1alpha1.ExtensionSpec{Versions: []v1alpha1.ExtensionVersion{
			{Version: "1.15.0", Source: v1alpha1.ArtifactSource{URL: "builtin://cert-manager-1.15.0.tgz"}}}}},
		&v1alpha1.Extension{ObjectMeta: metav1.ObjectMeta{Name: "example-operator"}, Spec: v1alpha1.ExtensionSpec{
			DefaultChannel: "stable", Versions: []v1alpha1.ExtensionVersion{
				{Version: "0.2.0", Engine: v1alpha1.EngineBundle, Source: v1alpha1.ArtifactSource{URL: "builtin://example-operator-0.2.0.tgz"},
					Channels: []v1alpha1.ChannelEntry{{Name: "stable"}, {Name: "fast"}}},
				{Version: "0.3.0", Engine: v1alpha1.EngineBundle, Source: v1alpha1.ArtifactSource{URL: "builtin://example-operator-0.3.0.tgz"},
					Channels: []v1alpha1.ChannelEntry{{Name: "fast"}}}}}},
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "builtin"}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Builtin: &v1alpha1.BuiltinSource{}}}},
		&v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "prod-eu", Labels: map[string]string{"env": "prod"}}, Spec: v1alpha1.ManagedClusterSpec{
			KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Name: "kc", Namespace: "team-a"}}},
		&v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "base"}, Spec: v1alpha1.ExtensionProfileSpec{
			IncludeHub: true, Namespace: "team-a", Extensions: []v1alpha1.ProfileExtension{{Name: "podinfo"}}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	annexctl := func(args ...string) (string, int) {
		return run(t, "annexctl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	}

	out, code := annexctl("install", "podinfo", "-n", "team-a", "--cluster", "prod-eu", "--set", "replicaCount=2", "--dry-run", "-o", "yaml")
	want := `apiVersion: annex.dev/v1alpha1
kind: ExtensionInstallation
metadata:
  name: podinfo
  namespace: team-a
spec:
  cluster: prod-eu
  extension: podinfo
  values:
    replicaCount: 2
`
	if code != 0 || out != want {
		t.Fatalf("install --dry-run -o yaml: exit %d\n%s\nwant\n%s", code, out, want)
	}
	// What was printed is what install creates.
	if out, code := annexctl("install", "podinfo", "-n", "team-a", "--cluster", "prod-eu", "--set", "replicaCount=2"); code != 0 ||
		out != "ExtensionInstallation team-a/podinfo created\n" {
		t.Fatalf("install: exit %d: %s", code, out)
	}
	created := &v1alpha1.ExtensionInstallation{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "podinfo"}, created); err != nil {
		t.Fatal(err)
	}
	printed := &v1alpha1.ExtensionInstallation{}
	if err := yaml.UnmarshalStrict([]byte(want), printed); err != nil {
		t.Fatal(err)
	}
	if created.Spec.Cluster != printed.Spec.Cluster || string(created.Spec.Values.Raw) != string(printed.Spec.Values.Raw) {
		t.Errorf("created %+v, printed %+v", created.Spec, printed.Spec)
	}
	if out, code := annexctl("install", "nginx", "-n", "team-a"); code != cli.ExitError ||
		!strings.Contains(out, `extension "nginx" not found in any catalog; run "annexctl search nginx"`) {
		t.Errorf("install of an unknown extension: exit %d: %s", code, out)
	}

	// Completion of resource names from the API server.
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"install", ""}, []string{"cert-manager", "example-operator", "podinfo"}},
		{[]string{"show", "po"}, []string{"cert-manager", "example-operator", "podinfo"}}, // the shell filters by prefix
		{[]string{"install", "podinfo", "--cluster", ""}, []string{"prod-eu"}},
		{[]string{"install", "example-operator", "--channel", ""}, []string{"fast", "stable"}},
		{[]string{"catalog", "sync", ""}, []string{"builtin"}},
		{[]string{"upgrade", "-n", "team-a", ""}, []string{"podinfo"}},
		{[]string{"status", ""}, []string{"podinfo"}},
		{[]string{"status", "-l", ""}, []string{"env=prod"}},
		{[]string{"search", "-o", ""}, []string{"table", "yaml", "json"}},
		{[]string{"rollout", "status", ""}, []string{"base"}},
		{[]string{"rollout", "undo", "b"}, []string{"base"}},
	} {
		out, code := annexctl(append([]string{"__complete"}, c.args...)...)
		// Names, one a line, then ":<directive>" (cobra's protocol).
		var names []string
		directive := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, ":") {
				directive = l
				break
			}
			names = append(names, l)
		}
		if code != 0 || directive != ":4" {
			t.Errorf("__complete %v: exit %d, directive %q (want :4, no file completion)\n%s", c.args, code, directive, out)
			continue
		}
		if got := strings.Join(names, ","); got != strings.Join(c.want, ",") {
			t.Errorf("__complete %v: %q, want %q", c.args, got, strings.Join(c.want, ","))
		}
	}

	// status through the command, at a fixed clock.
	now = func() time.Time { return created.CreationTimestamp.Add(2 * time.Minute) }
	defer func() { now = time.Now }()
	out, code = annexctl("status")
	wantStatus := `clusters        1: 0 ready, 0 not ready, 1 unreachable
installations   1: 1 not Ready
Kubernetes      not known ×1
shards          default ×1

cluster prod-eu: 0/1 ready, not reachable
└─ team-a/podinfo  podinfo -  resolve  2m
`
	if code != 0 || out != wantStatus {
		t.Errorf("status: exit %d\n%s\nwant\n%s", code, out, wantStatus)
	}
	// One installation: its tree, no summary.
	if out, code := annexctl("status", "podinfo", "-n", "team-a"); code != 0 || out != wantStatus[strings.Index(wantStatus, "cluster prod-eu"):] {
		t.Errorf("status podinfo: exit %d\n%s", code, out)
	}
	if out, code := annexctl("status", "-l", "env=staging"); code != 0 || out != "No cluster has labels that match env=staging.\n" {
		t.Errorf("status -l env=staging: exit %d: %s", code, out)
	}
	if out, code := annexctl("status", "-l", "env in prod"); code != cli.ExitUsage || !strings.Contains(out, `-l: "env in prod" is not a label selector`) {
		t.Errorf("status with an invalid selector: exit %d: %s", code, out)
	}
	if out, code := annexctl("status", "-l", "env=prod", "--not-ready", "--limit", "1", "-o", "json"); code != 0 ||
		!strings.Contains(out, `"summary": {`) || !strings.Contains(out, `"unreachable": 1`) || !strings.Contains(out, `"name": "prod-eu"`) {
		t.Errorf("status -l env=prod --not-ready --limit 1 -o json: exit %d: %s", code, out)
	}
	if out, code := annexctl("status", "nope"); code != cli.ExitError || !strings.Contains(out, `no ExtensionInstallation "nope" in any namespace`) {
		t.Errorf("status of a missing installation: exit %d: %s", code, out)
	}
	// rollout: a profile the manager has not rolled out yet, and the
	// refusal to pause a profile without steps, which says how to add
	// them.
	if out, code := annexctl("rollout", "status", "base"); code != 0 || !strings.Contains(out, "no revision yet") {
		t.Errorf("rollout status: exit %d: %s", code, out)
	}
	if out, code := annexctl("rollout", "pause", "base"); code != cli.ExitError || !strings.Contains(out, "profile base has no spec.rollout") {
		t.Errorf("rollout pause without steps: exit %d: %s", code, out)
	}
	if out, code := annexctl("rollout", "status", "base", "--wait", "--timeout", "300ms"); code != cli.ExitNotReady ||
		!strings.Contains(out, "no revision yet: waiting for the manager") {
		t.Errorf("rollout status --wait without a manager: exit %d: %s", code, out)
	}
	if out, code := annexctl("rollout", "approve", "base", "--reason", "x"); code != cli.ExitUsage {
		t.Errorf("rollout approve --reason without --deny: exit %d: %s", code, out)
	}
	// annexctl plan without a subcommand is the old name of resolve, kept
	// for one release: it says so, then prints what resolve prints.
	resolved, code := annexctl("resolve", "--kube-version", "1.36.0")
	if code != 0 || !strings.HasPrefix(resolved, "Resolution for the hub cluster, Kubernetes 1.36.0") {
		t.Errorf("resolve: exit %d: %s", code, resolved)
	}
	const renamed = `annexctl plan is renamed annexctl resolve; "annexctl plan" without a subcommand will be removed in the next release` + "\n"
	if out, code := annexctl("plan", "--kube-version", "1.36.0"); code != 0 || out != renamed+resolved {
		t.Errorf("plan, the old name of resolve: exit %d: %s", code, out)
	}
	// --wait that times out: 3.
	if out, code := annexctl("upgrade", "podinfo", "-n", "team-a", "--set", "replicaCount=3", "--wait", "--timeout", "300ms"); code != cli.ExitNotReady ||
		!strings.Contains(out, "resolve: waiting for Annex to look at") {
		t.Errorf("upgrade --wait without a manager: exit %d: %s", code, out)
	}
	// An operator's channel: named on install, changed on upgrade, and a
	// channel the extension lacks refused naming the ones it has.
	if out, code := annexctl("install", "example-operator", "-n", "team-a", "--channel", "fast", "--version", "0.3.0"); code != 0 {
		t.Fatalf("install --channel fast: exit %d: %s", code, out)
	}
	operator := &v1alpha1.ExtensionInstallation{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "example-operator"}, operator); err != nil || operator.Spec.Channel != "fast" {
		t.Fatalf("installed with --channel fast: spec.channel %q (%v)", operator.Spec.Channel, err)
	}
	if out, code := annexctl("upgrade", "example-operator", "-n", "team-a", "--channel", "stable"); code != 0 {
		t.Fatalf("upgrade --channel stable: exit %d: %s", code, out)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "example-operator"}, operator); err != nil || operator.Spec.Channel != "stable" {
		t.Fatalf("upgraded with --channel stable: spec.channel %q (%v)", operator.Spec.Channel, err)
	}
	if out, code := annexctl("__complete", "upgrade", "example-operator", "-n", "team-a", "--channel", ""); code != 0 || !strings.HasPrefix(out, "fast\nstable\n:4\n") {
		t.Errorf("__complete upgrade --channel: exit %d: %q", code, out)
	}
	if out, code := annexctl("upgrade", "example-operator", "-n", "team-a", "--channel", "beta"); code != cli.ExitUsage ||
		!strings.Contains(out, `--channel "beta": extension "example-operator" has no such channel; its channels: fast, stable`) {
		t.Errorf("upgrade to a channel the extension lacks: exit %d: %s", code, out)
	}
	if out, code := annexctl("install", "podinfo", "-n", "team-a", "--channel", "fast"); code != cli.ExitUsage ||
		!strings.Contains(out, `extension "podinfo" has no channels (only operator bundles do)`) {
		t.Errorf("install of a chart with --channel: exit %d: %s", code, out)
	}
}
