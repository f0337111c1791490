package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/annex-platform/annex/internal/testenv"
)

// helperOutEnv, set in a test Pod's env, makes the test binary the
// image's process (imageHelper) instead of running tests.
const helperOutEnv = "IMAGE_HELPER_OUT"

func TestMain(m *testing.M) {
	if os.Getenv(helperServeEnv) != "" {
		os.Exit(servingHelper())
	}
	if out := os.Getenv(helperOutEnv); out != "" {
		os.Exit(imageHelper(out))
	}
	os.Exit(m.Run())
}

// helperReport is what the helper process found about itself.
type helperReport struct {
	User           string   `json:"user"`
	Args           []string `json:"args"`
	WatchNamespace string   `json:"watchNamespace"`
	PodName        string   `json:"podName"`
}

// imageHelper plays an image's process: it appends a line to
// <out>/<tag>.starts, exits 1 on its first start when CRASH_FIRST is set,
// asks the API server who it is (with the KUBECONFIG the runner gave it),
// writes <out>/<tag>.json, and on SIGTERM writes <out>/<tag>.stopped.
func imageHelper(out string) int {
	tag := os.Args[2]
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "image helper:", err)
		return 2
	}
	starts, err := os.OpenFile(filepath.Join(out, tag+".starts"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(starts, os.Getpid())
	starts.Close()
	if os.Getenv("CRASH_FIRST") != "" {
		if _, err := os.Stat(filepath.Join(out, tag+".crashed")); errors.Is(err, os.ErrNotExist) {
			_ = os.WriteFile(filepath.Join(out, tag+".crashed"), nil, 0o600)
			return 1
		}
	}
	terminated := make(chan os.Signal, 1)
	signal.Notify(terminated, syscall.SIGTERM)
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return fail(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail(err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fail(err)
	}
	report, _ := json.Marshal(helperReport{
		User: review.Status.UserInfo.Username, Args: os.Args[3:],
		WatchNamespace: os.Getenv("WATCH_NAMESPACE"), PodName: os.Getenv("POD_NAME"),
	})
	if err := os.WriteFile(filepath.Join(out, tag+".json"), report, 0o600); err != nil {
		return fail(err)
	}
	<-terminated
	if err := os.WriteFile(filepath.Join(out, tag+".stopped"), nil, 0o600); err != nil {
		return fail(err)
	}
	return 0
}

// TestImagesRun runs a Deployment of an image the cluster runs locally:
// its Pod's container becomes a process (the test binary, as imageHelper)
// with the container's args, its downward-API env and a token of the
// Pod's ServiceAccount, restarted when it exits; changing the image
// replaces the process with one of the new tag, and deleting the
// Deployment stops it. A container of another image in the same Pod is not
// run. The runner says what it runs.
func TestImagesRun(t *testing.T) {
	binDir := testenv.RequireWorkloadsBinDir(t)
	ctx := context.Background()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	c := startCluster(t, Options{
		Dir: t.TempDir(), BinDir: binDir, Workloads: true, Nodes: 1, Log: &progress,
		Images: []Image{{Repository: "annex.dev/runner-test", Command: func(tag string) []string {
			return []string{self, "image-helper", tag}
		}}},
	})
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns, out := "images", t.TempDir()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "helper"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "helper"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "helper"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"olm.targetNamespaces": "a,b"}},
				Spec: corev1.PodSpec{
					ServiceAccountName: "helper",
					Containers: []corev1.Container{{
						Name:  "operator",
						Image: "annex.dev/runner-test:1.0",
						Args:  []string{"--flag"},
						Env: []corev1.EnvVar{
							{Name: helperOutEnv, Value: out},
							{Name: "CRASH_FIRST", Value: "1"},
							{Name: "WATCH_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['olm.targetNamespaces']"}}},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						},
					}, {
						Name:  "sidecar",
						Image: "registry.k8s.io/pause:3.10",
					}},
				},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The first start crashes (CRASH_FIRST); the restart reports.
	first := waitReport(t, out, "1.0")
	if want := "system:serviceaccount:images:helper"; first.User != want {
		t.Errorf("the process authenticated as %q, want %q", first.User, want)
	}
	if first.WatchNamespace != "a,b" || !strings.HasPrefix(first.PodName, "helper-") || !slices.Equal(first.Args, []string{"--flag"}) {
		t.Errorf("the process got WATCH_NAMESPACE=%q POD_NAME=%q args %v; want a,b, the Pod's name, [--flag]", first.WatchNamespace, first.PodName, first.Args)
	}
	if n := countLines(t, filepath.Join(out, "1.0.starts")); n != 2 {
		t.Errorf("started %d times, want 2 (a crash, then a restart)", n)
	}
	if _, err := os.Stat(filepath.Join(out, "3.10.starts")); err == nil {
		t.Error("the sidecar of another image was run")
	}

	// A new tag replaces the process.
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "helper", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"operator","image":"annex.dev/runner-test:2.0"}]}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReport(t, out, "2.0")
	waitFile(t, filepath.Join(out, "1.0.stopped"))

	// Deleting the Deployment stops it.
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "helper", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(out, "2.0.stopped"))

	// Stop before reading progress: nothing writes to it after that.
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	log := progress.String()
	for _, want := range []string{
		"images: running annex.dev/runner-test:1.0 for Pod images/" + first.PodName + " (Deployment images/helper) as ServiceAccount images/helper",
		"images: stopped annex.dev/runner-test:1.0 of Pod images/" + first.PodName,
		"restarting in 1s",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the progress log lacks %q:\n%s", want, log)
		}
	}
}

func waitReport(t *testing.T, out, tag string) helperReport {
	t.Helper()
	var r helperReport
	eventually(t, time.Minute, func() error {
		data, err := os.ReadFile(filepath.Join(out, tag+".json"))
		if err != nil {
			return fmt.Errorf("the process of tag %s has not reported: %w", tag, err)
		}
		return json.Unmarshal(data, &r)
	})
	return r
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	eventually(t, time.Minute, func() error {
		_, err := os.Stat(path)
		return err
	})
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}
