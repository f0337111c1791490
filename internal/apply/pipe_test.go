package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilexec "k8s.io/client-go/util/exec"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/plan"
)

// filesExec stands in for a kubelet: it answers `cat <path>` from files,
// and fails like a kubelet reports a failed command for a missing path.
func filesExec(files map[string]string) PodExec {
	return func(_ context.Context, _, _, _ string, command []string, limit int) ([]byte, error) {
		if len(command) != 2 || command[0] != "cat" {
			return nil, fmt.Errorf("unexpected command %q", command)
		}
		content, ok := files[command[1]]
		if !ok {
			return nil, utilexec.CodeExitError{Err: fmt.Errorf("command terminated with non-zero exit code: 1: cat: %s: No such file or directory", command[1]), Code: 1}
		}
		return []byte(content[:min(len(content), limit+1)]), nil
	}
}

// setPodRunning stands in for the kubelet, which the test API server does
// not run: the Pod's init containers are done and container runs.
func setPodRunning(t *testing.T, a *Applier, r PipeResult, container string) {
	t.Helper()
	pod := read(t, a, r.Pod)
	now := time.Now().UTC().Format(time.RFC3339)
	status := fmt.Sprintf(`{"status":{"phase":"Running","containerStatuses":[{"name":%q,"image":"x","imageID":"","ready":true,"restartCount":0,"state":{"running":{"startedAt":%q}}}]}}`, container, now)
	if err := a.Client.Status().Patch(t.Context(), pod, client.RawPatch(types.MergePatchType, []byte(status))); err != nil {
		t.Fatalf("mark Pod %s running: %v", describe(r.Pod), err)
	}
}

// createServiceAccount creates the namespace's default ServiceAccount,
// which Pods need and no controller creates in the test API server.
func createServiceAccount(t *testing.T, a *Applier, ns string) {
	t.Helper()
	sa := mustObject(t, fmt.Sprintf(`{apiVersion: v1, kind: ServiceAccount, metadata: {name: default, namespace: %s}}`, ns))
	if err := a.Client.Create(t.Context(), sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestRunPipe follows a pipe through the passes of a controller against the
// API server, with Exec and the kubelet's status writes played by the test.
func TestRunPipe(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "pipe-envtest"
	createNamespace(t, a, ns)
	createServiceAccount(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}
	a.Exec = filesExec(map[string]string{
		"/out/ca.pem":   "PEM\n",
		"/out/key.der":  "\xff\xfe",
		"/out/settings": "USER=admin\n",
	})
	p := plan.Pipe{
		Pod: mustObject(t, pipePodDoc("gen-certs", "/out")),
		Files: []plan.PipeFile{
			{File: "/out/ca.pem", Kind: "ConfigMap", Key: "ca"},
			{File: "/out/key.der", Kind: "ConfigMap", Key: "key_der"},
			{EnvFile: "/out/settings", Kind: "Secret", Key: "credentials", Name: "db-credentials"},
		},
	}
	before := p.Pod.DeepCopy()

	// The Pod is created, then awaited: every pass says the same.
	for range 2 {
		res, err := a.RunPipe(ctx, owner, ns, p)
		if err != nil {
			t.Fatalf("RunPipe: %v", err)
		}
		if want := "waiting for Pod pipe-envtest/gen-certs to run (phase Pending)"; res.Done || res.Message != want {
			t.Fatalf("RunPipe = %+v, want not Done and message %q", res, want)
		}
	}
	if !equalObjects(p.Pod, before) {
		t.Errorf("RunPipe modified the caller's Pod: %v", p.Pod.Object)
	}
	pod := read(t, a, ref("", "v1", "Pod", ns, "gen-certs"))
	containers, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
	restart, _, _ := unstructured.NestedString(pod.Object, "spec", "restartPolicy")
	if len(containers) != 1 || containers[0].(map[string]any)["name"] != pipeWaiterName || restart != "OnFailure" {
		t.Errorf("Pod has containers %v and restartPolicy %q, want the waiter alone and OnFailure", containers, restart)
	}
	if !owner.owns(pod) {
		t.Errorf("the Pod is not labelled for %s: %v", owner, pod.GetLabels())
	}

	// Running: the files are copied and the Pod deleted.
	setPodRunning(t, a, PipeResult{Pod: refOf(pod)}, pipeWaiterName)
	res, err := a.RunPipe(ctx, owner, ns, p)
	if err != nil || !res.Done {
		t.Fatalf("RunPipe on a running Pod = %+v, %v; want Done", res, err)
	}
	want := []string{"ConfigMap pipe-envtest/gen-certs.ca", "ConfigMap pipe-envtest/gen-certs.key-der", "Secret pipe-envtest/db-credentials"}
	var got []string
	for _, r := range res.Objects {
		got = append(got, describe(r))
		if obj := read(t, a, r); obj == nil || !owner.owns(obj) {
			t.Errorf("%s does not exist or is not labelled for %s: %v", describe(r), owner, obj)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Objects = %v, want %v", got, want)
	}
	ca := read(t, a, res.Objects[0])
	key := read(t, a, res.Objects[1])
	secret := read(t, a, res.Objects[2])
	for _, c := range []struct {
		obj    *unstructured.Unstructured
		fields []string
		want   string
	}{
		{ca, []string{"data", "ca.pem"}, "PEM\n"},
		{key, []string{"binaryData", "key.der"}, "//4="},
		{secret, []string{"data", "USER"}, "YWRtaW4="},
	} {
		if v, _, _ := unstructured.NestedString(c.obj.Object, c.fields...); v != c.want {
			t.Errorf("%s %s = %q, want %q", describe(refOf(c.obj)), strings.Join(c.fields, "."), v, c.want)
		}
	}
	if read(t, a, res.Pod) != nil {
		t.Errorf("Pod %s still exists after the pipe is Done", describe(res.Pod))
	}
}

// A pipe that cannot succeed fails with a *PipeError, and a Pod left from
// an earlier run with another spec is replaced.
func TestRunPipeFailures(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "pipe-failures"
	createNamespace(t, a, ns)
	createServiceAccount(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}
	a.Exec = filesExec(map[string]string{"/out/big": strings.Repeat("x", PipeFileLimit+1)})
	pipeOf := func(pod, file string) plan.Pipe {
		return plan.Pipe{Pod: mustObject(t, pipePodDoc(pod, "/out")), Files: []plan.PipeFile{{File: file, Kind: "Secret", Key: "k"}}}
	}
	// runningPipe runs the pipe's first pass and makes its Pod run.
	runningPipe := func(t *testing.T, p plan.Pipe) {
		t.Helper()
		res, err := a.RunPipe(ctx, owner, ns, p)
		if err != nil {
			t.Fatal(err)
		}
		setPodRunning(t, a, res, pipeWaiterName)
	}

	t.Run("missing file", func(t *testing.T) {
		p := pipeOf("missing", "/out/missing")
		runningPipe(t, p)
		_, err := a.RunPipe(ctx, owner, ns, p)
		want := "pipe Pod pipe-failures/missing, file /out/missing: `cat` in container \"waiter\" failed " +
			"(command terminated with non-zero exit code: 1: cat: /out/missing: No such file or directory); make the Pod's init containers write the file"
		var pipeErr *PipeError
		if !errors.As(err, &pipeErr) || err.Error() != want {
			t.Errorf("RunPipe error =\n%v\nwant a *PipeError\n%s", err, want)
		}
	})

	t.Run("file too large", func(t *testing.T) {
		p := pipeOf("big", "/out/big")
		runningPipe(t, p)
		_, err := a.RunPipe(ctx, owner, ns, p)
		var pipeErr *PipeError
		if !errors.As(err, &pipeErr) || pipeErr.File != "/out/big" || !strings.Contains(err.Error(), "larger than 1048576 bytes (1 MiB)") {
			t.Errorf("RunPipe error = %v, want a *PipeError saying /out/big is larger than 1 MiB", err)
		}
	})

	t.Run("pod failed", func(t *testing.T) {
		p := pipeOf("failed", "/out/x")
		res, err := a.RunPipe(ctx, owner, ns, p)
		if err != nil {
			t.Fatal(err)
		}
		status := `{"status":{"phase":"Failed","initContainerStatuses":[{"name":"gen","image":"x","imageID":"","ready":false,"restartCount":0,
			"state":{"terminated":{"exitCode":2,"reason":"Error","startedAt":null,"finishedAt":null}}}]}}`
		if err := a.Client.Status().Patch(ctx, read(t, a, res.Pod), client.RawPatch(types.MergePatchType, []byte(status))); err != nil {
			t.Fatal(err)
		}
		_, err = a.RunPipe(ctx, owner, ns, p)
		var pipeErr *PipeError
		if !errors.As(err, &pipeErr) || !strings.Contains(err.Error(), `init container "gen" exited with code 2 (Error)`) {
			t.Errorf("RunPipe error = %v, want a *PipeError naming the failed init container", err)
		}
	})

	t.Run("pod of an earlier run with another spec", func(t *testing.T) {
		p := pipeOf("changed", "/out/x")
		res, err := a.RunPipe(ctx, owner, ns, p)
		if err != nil {
			t.Fatal(err)
		}
		old := read(t, a, res.Pod)
		changed := pipeOf("changed", "/out/x")
		inits, _, _ := unstructured.NestedSlice(changed.Pod.Object, "spec", "initContainers")
		inits[0].(map[string]any)["command"] = []any{"sh", "-c", "openssl version"} // a Pod's commands cannot change
		if err := unstructured.SetNestedSlice(changed.Pod.Object, inits, "spec", "initContainers"); err != nil {
			t.Fatal(err)
		}
		res, err = a.RunPipe(ctx, owner, ns, changed)
		if want := "replacing Pod pipe-failures/changed, left from an earlier run with another spec"; err != nil || res.Message != want {
			t.Fatalf("RunPipe with a changed Pod = %+v, %v; want message %q", res, err, want)
		}
		res, err = a.RunPipe(ctx, owner, ns, changed)
		if err != nil || res.Done {
			t.Fatalf("RunPipe after the replacement = %+v, %v; want it waiting", res, err)
		}
		if pod := read(t, a, res.Pod); pod == nil || pod.GetUID() == old.GetUID() {
			t.Errorf("the Pod was not created anew: %v", pod)
		}
	})

	t.Run("pod of another installation", func(t *testing.T) {
		p := pipeOf("theirs", "/out/x")
		if _, err := a.RunPipe(ctx, Owner{Name: "other", Namespace: "team-b"}, ns, p); err != nil {
			t.Fatal(err)
		}
		_, err := a.RunPipe(ctx, owner, ns, p)
		var conflict *ConflictError
		if !errors.As(err, &conflict) || conflict.Installation != "team-b/other" {
			t.Errorf("RunPipe error = %v, want a *ConflictError naming team-b/other", err)
		}
	})
}

func TestPreparePipe(t *testing.T) {
	const kudoPod = `
apiVersion: v1
kind: Pod
metadata: {name: Gen_Certs}
spec:
  volumes: [{name: cfg, configMap: {name: c}}, {name: out, emptyDir: {}}]
  initContainers:
  - {name: gen, image: i, volumeMounts: [{name: out, mountPath: /tmp/out/}]}`
	file := func(f, kind, key string) plan.PipeFile { return plan.PipeFile{File: f, Kind: kind, Key: key} }

	t.Run("KUDO pod", func(t *testing.T) {
		pod, container, targets, err := preparePipe(plan.Pipe{Pod: mustObject(t, kudoPod), Files: []plan.PipeFile{
			file("/tmp/out/ca.pem", "Secret", "CA_cert"),
			{EnvFile: "/tmp/out/env", Kind: "ConfigMap", Key: "env", Name: "settings"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		containers, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
		wantWaiter := map[string]any{"name": "waiter", "image": pipeWaiterImage, "command": []any{"sleep", "infinity"},
			"volumeMounts": []any{map[string]any{"name": "out", "mountPath": "/tmp/out"}}}
		if container != "waiter" || len(containers) != 1 || fmt.Sprint(containers[0]) != fmt.Sprint(wantWaiter) {
			t.Errorf("container %q, containers %v; want the waiter %v", container, containers, wantWaiter)
		}
		wantTargets := []pipeTarget{
			{file: "/tmp/out/ca.pem", kind: "Secret", name: "gen-certs.ca-cert", key: "CA_cert"},
			{file: "/tmp/out/env", env: true, kind: "ConfigMap", name: "settings", key: "env"},
		}
		if !slices.Equal(targets, wantTargets) {
			t.Errorf("targets = %+v, want %+v", targets, wantTargets)
		}
	})

	t.Run("pod with its own container", func(t *testing.T) {
		doc := kudoPod + `
  containers:
  - {name: keep, image: i, volumeMounts: [{name: out, mountPath: /data}]}`
		pod, container, targets, err := preparePipe(plan.Pipe{Pod: mustObject(t, doc), Files: []plan.PipeFile{file("/data/x", "Secret", "x")}})
		if err != nil {
			t.Fatal(err)
		}
		containers, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
		if container != "keep" || len(containers) != 1 || len(targets) != 1 {
			t.Errorf("container %q, containers %v, targets %v; want the Pod's own container", container, containers, targets)
		}
	})

	cases := []struct {
		name string
		pod  string
		// edit changes the pipe before it is prepared.
		edit func(p *plan.Pipe)
		want string
	}{
		{"no pod", "", func(p *plan.Pipe) { p.Pod = nil }, "the pipe has no Pod"},
		{"not a pod", `{apiVersion: batch/v1, kind: Job, metadata: {name: j}}`, nil, "a pipe runs a Pod (apiVersion v1), not batch/v1 Job"},
		{"no name", `{apiVersion: v1, kind: Pod, metadata: {}}`, nil, "metadata.name: required"},
		{"two emptyDirs", strings.Replace(kudoPod, "configMap: {name: c}", "emptyDir: {}", 1), nil,
			"spec.volumes: a pipe Pod needs exactly one emptyDir volume, where its init containers write the files (it has 2)"},
		{"no init container", `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {volumes: [{name: out, emptyDir: {}}], containers: [{name: c, image: i}]}}`, nil,
			"spec.initContainers: a pipe Pod writes its files in init containers; add one"},
		{"volume not mounted", strings.Replace(kudoPod, "name: out, mountPath", "name: cfg, mountPath", 1), nil,
			`spec.initContainers: none mounts the emptyDir volume "out"`},
		{"container without the volume", kudoPod + "\n  containers: [{name: c, image: i}]", nil,
			`spec.containers[0] ("c"): must mount the emptyDir volume "out"`},
		{"no files", kudoPod, func(p *plan.Pipe) { p.Files = nil }, "files: a pipe copies at least one file"},
		{"file and envFile", kudoPod, func(p *plan.Pipe) { p.Files[0].EnvFile = "/tmp/out/env" }, "files[0]: sets both file and envFile"},
		{"neither", kudoPod, func(p *plan.Pipe) { p.Files[0].File = "" }, "files[0]: set file or envFile"},
		{"relative path", kudoPod, func(p *plan.Pipe) { p.Files[0].File = "out/ca.pem" }, `files[0]: "out/ca.pem" must be an absolute, clean path such as /tmp/out/ca.pem`},
		{"unclean path", kudoPod, func(p *plan.Pipe) { p.Files[0].File = "/tmp/out/../etc/passwd" }, "must be an absolute, clean path"},
		{"outside the volume", kudoPod, func(p *plan.Pipe) { p.Files[0].File = "/tmp/outside" },
			"files[0]: /tmp/outside must be in /tmp/out, where the Pod mounts its emptyDir volume"},
		{"the mount itself", kudoPod, func(p *plan.Pipe) { p.Files[0].File = "/tmp/out" }, "must be in /tmp/out"},
		{"bad kind", kudoPod, func(p *plan.Pipe) { p.Files[0].Kind = "Volume" }, `files[0]: kind must be Secret or ConfigMap (got "Volume")`},
		{"bad key", kudoPod, func(p *plan.Pipe) { p.Files[0].Key = "a.b" }, `files[0]: key "a.b" must match`},
		{"key twice", kudoPod, func(p *plan.Pipe) { p.Files = append(p.Files, file("/tmp/out/b", "ConfigMap", "ca")) }, `files[1]: key "ca" is used twice`},
		{"name twice", kudoPod, func(p *plan.Pipe) {
			p.Files[0].Name = "same"
			p.Files = append(p.Files, plan.PipeFile{File: "/tmp/out/b", Kind: "Secret", Key: "b", Name: "same"})
		}, `files[1]: Secret "same" is written by two files`},
		{"bad name", kudoPod, func(p *plan.Pipe) { p.Files[0].Name = "Not_A_Name" }, `files[0]: object name "Not_A_Name"`},
		{"file name not a key", kudoPod, func(p *plan.Pipe) { p.Files[0].File = "/tmp/out/a b" }, `files[0]: the file's name "a b" becomes a key`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := plan.Pipe{Files: []plan.PipeFile{file("/tmp/out/ca.pem", "Secret", "ca")}}
			if tc.pod != "" {
				p.Pod = mustObject(t, tc.pod)
			}
			if tc.edit != nil {
				tc.edit(&p)
			}
			_, _, _, err := preparePipe(p)
			var pipeErr *PipeError
			if !errors.As(err, &pipeErr) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("preparePipe error = %v, want a *PipeError containing %q", err, tc.want)
			}
		})
	}
}

func TestPipeObjectName(t *testing.T) {
	for _, tc := range []struct{ pod, key, want string }{
		{"gen-certs", "ca", "gen-certs.ca"},
		{"Gen_Certs", "CA_cert", "gen-certs.ca-cert"},
		{"-pod-", "key-", "pod-.key"},
	} {
		if got := pipeObjectName(tc.pod, tc.key); got != tc.want {
			t.Errorf("pipeObjectName(%q, %q) = %q, want %q", tc.pod, tc.key, got, tc.want)
		}
	}
}

func TestParseEnvFile(t *testing.T) {
	cases := []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{"kubectl's rules", "\uFEFF# comment\n\n  USER=admin\r\nPASS=a=b\nQUOTED=\"x\"\nEMPTY=\nUSER=root\n",
			map[string]string{"USER": "root", "PASS": "a=b", "QUOTED": `"x"`, "EMPTY": ""}, ""},
		// The line is not quoted in the error: it may hold a secret.
		{"no equals sign", "A=1\nhunter2\n", nil, `line 2: has no "="; write KEY=VALUE`},
		{"bad key", "A B=1\n", nil, "line 1: the key is not valid"},
		{"empty key", "=1\n", nil, "line 1: the key is not valid"},
		{"nothing", "# only a comment\n", nil, "holds no KEY=VALUE line"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseEnvFile([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) || strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error = %v, want one starting %q", err, tc.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Errorf("parseEnvFile = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func FuzzParseEnvFile(f *testing.F) {
	for _, seed := range []string{"A=1\n", "# c\n\nB=2=3\r\n", "\uFEFFX=\n", "no-equals\n", "=v\n", "\xff=\xfe\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseEnvFile(data)
		if err != nil {
			return
		}
		for k, v := range entries {
			if k == "" || strings.ContainsAny(k, "=\n") || strings.Contains(v, "\n") {
				t.Fatalf("entry %q=%q from %q", k, v, data)
			}
		}
	})
}

func TestPipeObject(t *testing.T) {
	cases := []struct {
		name   string
		target pipeTarget
		data   string
		want   string
	}{
		{"ConfigMap of text", pipeTarget{file: "/o/ca.pem", kind: "ConfigMap", name: "n"}, "PEM",
			`{"apiVersion":"v1","data":{"ca.pem":"PEM"},"kind":"ConfigMap","metadata":{"name":"n","namespace":"ns"}}`},
		{"ConfigMap of bytes", pipeTarget{file: "/o/k", kind: "ConfigMap", name: "n"}, "\xff",
			`{"apiVersion":"v1","binaryData":{"k":"/w=="},"kind":"ConfigMap","metadata":{"name":"n","namespace":"ns"}}`},
		{"Secret", pipeTarget{file: "/o/k", kind: "Secret", name: "n"}, "v",
			`{"apiVersion":"v1","data":{"k":"dg=="},"kind":"Secret","metadata":{"name":"n","namespace":"ns"},"type":"Opaque"}`},
		{"ConfigMap of an env file", pipeTarget{file: "/o/env", env: true, kind: "ConfigMap", name: "n"}, "A=1\nB=\xff\n",
			`{"apiVersion":"v1","binaryData":{"B":"/w=="},"data":{"A":"1"},"kind":"ConfigMap","metadata":{"name":"n","namespace":"ns"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := pipeObject(tc.target, "ns", []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := obj.MarshalJSON()
			if string(bytes.TrimSpace(got)) != tc.want {
				t.Errorf("pipeObject =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestPipePodState(t *testing.T) {
	cases := []struct {
		name, status string
		running      bool
		waiting      string
		failure      string
	}{
		{"new", `{}`, false, "phase Pending", ""},
		{"init container crashing", `{"phase":"Pending","initContainerStatuses":[{"name":"gen","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}`,
			false, `phase Pending; init container "gen": CrashLoopBackOff`, ""},
		{"running", `{"phase":"Running"}`, true, "", ""},
		{"container running", `{"phase":"Pending","containerStatuses":[{"name":"waiter","state":{"running":{}}}]}`, true, "", ""},
		{"succeeded", `{"phase":"Succeeded"}`, false, "", `the Pod finished before its files were read; its container "waiter" must keep running`},
		{"failed", `{"phase":"Failed","reason":"Evicted","message":"low on memory"}`, false, "", "the Pod failed: Evicted: low on memory; see the logs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := mustObject(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"status":%s}`, tc.status))
			running, waiting, failure := pipePodState(pod, "waiter")
			if running != tc.running || waiting != tc.waiting || !strings.HasPrefix(failure, tc.failure) || (failure == "") != (tc.failure == "") {
				t.Errorf("pipePodState = %v, %q, %q; want %v, %q, %q…", running, waiting, failure, tc.running, tc.waiting, tc.failure)
			}
		})
	}
}

func TestCappedBuffer(t *testing.T) {
	full := 0
	b := &cappedBuffer{limit: 4, full: func() { full++ }}
	for _, s := range []string{"ab", "cd", "ef", "gh"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want all of it accepted", s, n, err)
		}
	}
	got, overflowed := b.contents()
	if string(got) != "abcd" || !overflowed || full != 1 {
		t.Errorf("contents = %q, overflowed %v, full called %d times; want \"abcd\", true, 1", got, overflowed, full)
	}
}
