package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/internal/localcluster"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/testenv"
)

// pipePodDoc is a KUDO-style pipe Pod: one init container writing into the
// emptyDir volume mounted at mount, no containers.
func pipePodDoc(name, mount string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  volumes: [{name: out, emptyDir: {}}]
  initContainers:
  - name: gen
    image: registry.example/openssl:3
    command: [sh, -c, "openssl req ... -out %[2]s/ca.pem"]
    volumeMounts: [{name: out, mountPath: %[2]q}]`, name, mount)
}

// runPipeUntilDone calls RunPipe, as a controller would on each pass,
// until it is Done, and returns the last result. Errors a retry may fix
// are retried; others fail the test.
func runPipeUntilDone(t *testing.T, a *Applier, owner Owner, ns string, p plan.Pipe, timeout time.Duration) PipeResult {
	t.Helper()
	var res PipeResult
	testenv.Eventually(t, timeout, func() error {
		var err error
		res, err = a.RunPipe(t.Context(), owner, ns, p)
		var permanent *PipeError
		if errors.As(err, &permanent) {
			t.Fatalf("RunPipe: %v", err)
		}
		switch {
		case err != nil:
			return err
		case !res.Done:
			return errors.New(res.Message)
		}
		return nil
	})
	return res
}

// TestRunPipeOnLocalCluster runs a pipe end to end on a local cluster:
// kube-scheduler puts the Pod on a kwok node, kwok makes it Running, and
// RunPipe reads its files through the pods/exec subresource, which the API
// server sends to kwok. kwok runs no containers: it answers exec by running
// `cat` on this machine (localcluster.Options.PodExecDir), so the test
// plays the init container and writes the files where the Pod mounts its
// emptyDir volume, an absolute path on this machine.
func TestRunPipeOnLocalCluster(t *testing.T) {
	binDir := testenv.RequireWorkloadsBinDir(t)
	ctx := context.Background()
	c, err := localcluster.Start(ctx, localcluster.Options{
		Dir: t.TempDir(), BinDir: binDir, Workloads: true, Nodes: 1, PodExecDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop the local cluster: %v", err)
		}
	})
	a, err := New(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "pipe"
	createNamespace(t, a, ns)
	// Pods need the namespace's default ServiceAccount, which
	// kube-controller-manager creates.
	testenv.Eventually(t, time.Minute, func() error {
		if read(t, a, ref("", "v1", "ServiceAccount", ns, "default")) == nil {
			return errors.New("no ServiceAccount default yet")
		}
		return nil
	})

	mount := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(mount, 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"ca.pem":   "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		"settings": "# generated\nUSER=admin\nPASSWORD=s3cret=yes\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(mount, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	owner := Owner{Name: "demo", Namespace: "team-a"}
	p := plan.Pipe{
		Pod: mustObject(t, pipePodDoc("gen-certs", mount)),
		Files: []plan.PipeFile{
			{File: mount + "/ca.pem", Kind: "ConfigMap", Key: "ca"},
			{EnvFile: mount + "/settings", Kind: "Secret", Key: "credentials", Name: "db-credentials"},
		},
	}

	res := runPipeUntilDone(t, a, owner, ns, p, 2*time.Minute)

	want := []string{"ConfigMap pipe/gen-certs.ca", "Secret pipe/db-credentials"}
	var got []string
	for _, r := range res.Objects {
		got = append(got, describe(r))
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("Objects = %v, want %v", got, want)
	}
	cm := read(t, a, res.Objects[0])
	if v, _, _ := unstructured.NestedString(cm.Object, "data", "ca.pem"); v != files["ca.pem"] {
		t.Errorf("ConfigMap data[ca.pem] = %q, want %q", v, files["ca.pem"])
	}
	secret := read(t, a, res.Objects[1])
	data, _, _ := unstructured.NestedStringMap(secret.Object, "data")
	if len(data) != 2 || data["USER"] != "YWRtaW4=" || data["PASSWORD"] != "czNjcmV0PXllcw==" {
		t.Errorf("Secret data = %v, want USER=admin and PASSWORD=s3cret=yes, base64-encoded", data)
	}
	for _, obj := range []*unstructured.Unstructured{cm, secret} {
		if !owner.owns(obj) {
			t.Errorf("%s is not labelled for %s: %v", describe(refOf(obj)), owner, obj.GetLabels())
		}
	}
	// kwok removes the deleted Pod.
	testenv.Eventually(t, time.Minute, func() error {
		if pod := read(t, a, res.Pod); pod != nil {
			return fmt.Errorf("Pod %s still exists", describe(res.Pod))
		}
		return nil
	})

	// A file too large fails the pipe for good; RunPipe stops reading it
	// after 1 MiB. A missing file fails `cat`, which a kubelet reports
	// with its exit code, so that the pipe fails for good too (TestRunPipe
	// shows that); kwok reports it as an internal error of the exec, so
	// here it is an error to retry, which still quotes cat's complaint.
	big := strings.Repeat("x", 4*PipeFileLimit)
	if err := os.WriteFile(filepath.Join(mount, "big"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod, file, want string
		permanent       bool
	}{
		{"big-file", "big", "larger than 1048576 bytes", true},
		{"missing-file", "missing", "No such file or directory", false},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			p := plan.Pipe{
				Pod:   mustObject(t, pipePodDoc(tc.pod, mount)),
				Files: []plan.PipeFile{{File: mount + "/" + tc.file, Kind: "ConfigMap", Key: "k"}},
			}
			var err error
			testenv.Eventually(t, time.Minute, func() error {
				var res PipeResult
				res, err = a.RunPipe(t.Context(), owner, ns, p)
				if err == nil && !res.Done {
					return errors.New(res.Message)
				}
				return nil
			})
			var pipeErr *PipeError
			if errors.As(err, &pipeErr) != tc.permanent || !strings.Contains(err.Error(), mount+"/"+tc.file) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("RunPipe error = %v, want one about %s saying %q (a *PipeError: %v)", err, tc.file, tc.want, tc.permanent)
			}
		})
	}
}
