package apply

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/plan"
)

// A pipe (KUDO's Pipe task, KEP-17) runs a Pod whose init containers write
// files into its one emptyDir volume, copies each file into a Secret or
// ConfigMap, and deletes the Pod.

const (
	// PipeFileLimit is the size of the largest file a pipe copies: 1 MiB,
	// as in KUDO, which keeps each object well below the API server's
	// limit.
	PipeFileLimit = 1 << 20
	// pipeReadTimeout bounds the reading of one file from the Pod.
	pipeReadTimeout = 30 * time.Second
	// pipeWaiterName and pipeWaiterImage make the container RunPipe adds to
	// a pipe Pod without containers (as KUDO does): it keeps the Pod
	// running, with the emptyDir volume mounted, until its files are read.
	pipeWaiterName  = "waiter"
	pipeWaiterImage = "busybox:1.37"
)

// pipeKeyPattern is what a pipe file's key must match (KUDO's rule).
var pipeKeyPattern = regexp.MustCompile(`^[a-zA-Z0-9_\-]+$`)

// PipeResult is what one call of RunPipe did.
type PipeResult struct {
	// Done is true once every file has been copied and the Pod deleted.
	Done bool
	// Message says what the pipe waits for while it is not Done; it
	// changes only when the Pod's state does.
	Message string
	// Pod is the pipe's Pod, labelled for the owner. A caller may record
	// it in the installation's inventory while the pipe runs, so that an
	// uninstall in the meantime removes it; RunPipe deletes it when Done.
	Pod v1alpha1.ObjectReference
	// Objects are the Secrets and ConfigMaps written, labelled for the
	// owner like every applied object, in the order of the pipe's files;
	// set when Done.
	Objects []v1alpha1.ObjectReference
}

// PipeError is a pipe that cannot succeed as written: the pipe or its Pod
// is invalid, the Pod failed, or a file is missing, unreadable or too
// large. Retrying does not help; the plan's author must change the pipe.
type PipeError struct {
	Pod v1alpha1.ObjectReference
	// File is the path of the file concerned, or "" when the error is
	// about the pipe or its Pod.
	File string
	Err  error
}

// Permanent marks the error as one that retrying does not fix, for
// callers that classify errors without importing this package.
func (e *PipeError) Permanent() bool { return true }

func (e *PipeError) Error() string {
	s := "pipe " + describe(e.Pod)
	if e.File != "" {
		s += ", file " + e.File
	}
	return s + ": " + e.Err.Error()
}

func (e *PipeError) Unwrap() error { return e.Err }

// RunPipe advances the pipe p by one step and returns at once, but for
// bounded reads of its files; the caller calls it again, on a later pass,
// until it is Done:
//
//  1. it applies the Pod p.Pod (labelled for owner, placed in
//     defaultNamespace when it has no namespace) and, while the Pod is not
//     running, returns a Result that is not Done and says what it waits
//     for. A Pod without containers gets one that sleeps, as in KUDO,
//     mounting the emptyDir volume where its first init container does; a
//     Pod without a restartPolicy gets OnFailure.
//  2. once the Pod runs (its init containers have written the files), it
//     reads each file with `cat` in the Pod's first container (through
//     Exec), writes each into its Secret or ConfigMap in the Pod's
//     namespace, deletes the Pod and returns Done.
//
// A file goes into the object p.Files[i].Name (default: the Pod's name and
// the file's key, joined by a dot and reduced to a valid name). A File is
// stored under its base name; in a ConfigMap under data, or binaryData
// when it is not UTF-8. An EnvFile's KEY=VALUE lines become keys of their
// own (see parseEnvFile). Secrets are of type Opaque.
//
// Every call runs the pipe anew until it is Done: after Done, a new call
// starts a new Pod. A Pod of owner left from an earlier run is used when it
// matches p.Pod, replaced when its spec changed, and awaited while it is
// being deleted.
//
// Errors: a *PipeError when the pipe cannot succeed as written (see
// there); a *ConflictError when the Pod or an object belongs to another
// installation; *ObjectErrors for failures that a retry may fix (reading,
// writing, deleting, a Pod that cannot be reached).
func (a *Applier) RunPipe(ctx context.Context, owner Owner, defaultNamespace string, p plan.Pipe) (PipeResult, error) {
	pod, container, targets, err := preparePipe(p)
	if err != nil {
		return PipeResult{}, err
	}
	if err := a.place(pod, defaultNamespace); err != nil {
		return PipeResult{}, err
	}
	ref := refOf(pod)
	res := PipeResult{Pod: ref}
	live, err := a.applyOne(ctx, owner, pod, false)
	if apierrors.IsInvalid(err) {
		return a.replacePipePod(ctx, owner, res, err)
	}
	if err != nil {
		return res, err
	}
	if live.GetDeletionTimestamp() != nil {
		res.Message = fmt.Sprintf("waiting for the previous %s to be deleted", describe(ref))
		return res, nil
	}
	running, waiting, failure := pipePodState(live, container)
	if failure != "" {
		return res, &PipeError{Pod: ref, Err: errors.New(failure)}
	}
	if !running {
		res.Message = fmt.Sprintf("waiting for %s to run (%s)", describe(ref), waiting)
		return res, nil
	}

	objs := make([]*unstructured.Unstructured, 0, len(targets))
	for _, t := range targets {
		data, err := a.readPipeFile(ctx, ref, container, t.file)
		if err != nil {
			return res, err
		}
		obj, err := pipeObject(t, ref.Namespace, data)
		if err != nil {
			return res, &PipeError{Pod: ref, File: t.file, Err: err}
		}
		objs = append(objs, obj)
	}
	written := make([]v1alpha1.ObjectReference, 0, len(objs))
	for _, obj := range objs {
		if _, err := a.applyOne(ctx, owner, obj, false); err != nil {
			return res, err
		}
		written = append(written, refOf(obj))
	}
	if _, err := a.deleteOne(ctx, live); err != nil {
		return res, &ObjectError{Op: "delete", Object: ref, Err: err}
	}
	res.Done, res.Objects = true, written
	return res, nil
}

// replacePipePod handles a Pod the server refused to apply (applyErr): a
// Pod of owner left from an earlier run, whose spec cannot change, is
// deleted so that the next call creates it anew; otherwise the Pod itself
// is invalid.
func (a *Applier) replacePipePod(ctx context.Context, owner Owner, res PipeResult, applyErr error) (PipeResult, error) {
	live, err := a.get(ctx, res.Pod)
	if err != nil {
		return res, &ObjectError{Op: "read", Object: res.Pod, Err: err}
	}
	if live == nil || !owner.owns(live) {
		return res, &PipeError{Pod: res.Pod, Err: fmt.Errorf("the Pod is invalid: %w", errors.Unwrap(applyErr))}
	}
	if _, err := a.deleteOne(ctx, live); err != nil {
		return res, &ObjectError{Op: "delete", Object: res.Pod, Err: err}
	}
	res.Message = fmt.Sprintf("replacing %s, left from an earlier run with another spec", describe(res.Pod))
	return res, nil
}

// readPipeFile reads file in container of the Pod ref with `cat`.
func (a *Applier) readPipeFile(ctx context.Context, ref v1alpha1.ObjectReference, container, file string) ([]byte, error) {
	if a.Exec == nil {
		return nil, errors.New("apply: Applier.Exec is not set; build the Applier with New")
	}
	ctx, cancel := context.WithTimeout(ctx, pipeReadTimeout)
	defer cancel()
	data, err := a.Exec(ctx, ref.Namespace, ref.Name, container, []string{"cat", file}, PipeFileLimit)
	var exit utilexec.ExitError
	switch {
	case errors.As(err, &exit):
		return nil, &PipeError{Pod: ref, File: file, Err: fmt.Errorf(
			"`cat` in container %q failed (%w); make the Pod's init containers write the file", container, err)}
	case err != nil:
		return nil, &ObjectError{Op: "read", Object: ref, Err: fmt.Errorf("pipe file %s in container %q: %w", file, container, err)}
	case len(data) > PipeFileLimit:
		return nil, &PipeError{Pod: ref, File: file, Err: fmt.Errorf(
			"larger than %d bytes (1 MiB), the limit of a pipe file; pipe small files such as certificates and keep larger data in a volume", PipeFileLimit)}
	}
	return data, nil
}

// pipeTarget is one file of a pipe and the object it goes into.
type pipeTarget struct {
	file string
	env  bool // file is an EnvFile
	kind string
	name string
	key  string
}

// preparePipe validates p and returns the Pod to apply (a copy of p.Pod,
// completed as RunPipe describes), the name of the container the files are
// read in, and the pipe's files. Errors are *PipeErrors.
func preparePipe(p plan.Pipe) (*unstructured.Unstructured, string, []pipeTarget, error) {
	if p.Pod == nil {
		return nil, "", nil, &PipeError{Err: errors.New("the pipe has no Pod; give it one")}
	}
	obj := p.Pod.DeepCopy()
	ref := refOf(obj)
	fail := func(format string, args ...any) (*unstructured.Unstructured, string, []pipeTarget, error) {
		return nil, "", nil, &PipeError{Pod: ref, Err: fmt.Errorf(format, args...)}
	}
	if gvk := obj.GroupVersionKind(); gvk.Group != "" || gvk.Version != "v1" || gvk.Kind != "Pod" {
		return fail("a pipe runs a Pod (apiVersion v1), not %s %s", obj.GetAPIVersion(), gvk.Kind)
	}
	if obj.GetName() == "" {
		return fail("metadata.name: required; name the pipe's Pod")
	}
	var pod corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &pod); err != nil {
		return fail("not a valid Pod: %v", err)
	}
	volume, err := pipeVolume(pod.Spec)
	if err != nil {
		return fail("%v", err)
	}
	if len(pod.Spec.InitContainers) == 0 {
		return fail("spec.initContainers: a pipe Pod writes its files in init containers; add one")
	}
	if len(pod.Spec.Containers) == 0 {
		mount := ""
		for _, c := range pod.Spec.InitContainers {
			if mount = mountPath(c, volume); mount != "" {
				break
			}
		}
		if mount == "" {
			return fail("spec.initContainers: none mounts the emptyDir volume %q; mount it where the files are written", volume)
		}
		waiter := map[string]any{"name": pipeWaiterName, "image": pipeWaiterImage, "command": []any{"sleep", "infinity"},
			"volumeMounts": []any{map[string]any{"name": volume, "mountPath": mount}}}
		if err := unstructured.SetNestedSlice(obj.Object, []any{waiter}, "spec", "containers"); err != nil {
			return fail("%v", err)
		}
		pod.Spec.Containers = []corev1.Container{{Name: pipeWaiterName,
			VolumeMounts: []corev1.VolumeMount{{Name: volume, MountPath: mount}}}}
	}
	if pod.Spec.RestartPolicy == "" {
		if err := unstructured.SetNestedField(obj.Object, string(corev1.RestartPolicyOnFailure), "spec", "restartPolicy"); err != nil {
			return fail("%v", err)
		}
	}
	reader := pod.Spec.Containers[0]
	mount := mountPath(reader, volume)
	if mount == "" {
		return fail("spec.containers[0] (%q): must mount the emptyDir volume %q, from which the files are read", reader.Name, volume)
	}
	targets, err := pipeTargets(obj.GetName(), mount, p.Files)
	if err != nil {
		return fail("%v", err)
	}
	return obj, reader.Name, targets, nil
}

// pipeVolume returns the name of spec's one emptyDir volume.
func pipeVolume(spec corev1.PodSpec) (string, error) {
	var names []string
	for _, v := range spec.Volumes {
		if v.EmptyDir != nil {
			names = append(names, v.Name)
		}
	}
	if len(names) != 1 {
		return "", fmt.Errorf("spec.volumes: a pipe Pod needs exactly one emptyDir volume, where its init containers write the files (it has %d)", len(names))
	}
	return names[0], nil
}

// mountPath returns where c mounts volume, or "".
func mountPath(c corev1.Container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return path.Clean(m.MountPath)
		}
	}
	return ""
}

// pipeTargets validates the files of a pipe whose Pod podName mounts its
// emptyDir volume at mount, and names their objects.
func pipeTargets(podName, mount string, files []plan.PipeFile) ([]pipeTarget, error) {
	if len(files) == 0 {
		return nil, errors.New("files: a pipe copies at least one file; add one")
	}
	keys := map[string]bool{}
	names := map[string]bool{}
	targets := make([]pipeTarget, 0, len(files))
	for i, f := range files {
		field := fmt.Sprintf("files[%d]", i)
		t := pipeTarget{file: f.File, kind: f.Kind, key: f.Key, name: f.Name}
		switch {
		case f.File != "" && f.EnvFile != "":
			return nil, fmt.Errorf("%s: sets both file and envFile; keep one", field)
		case f.File == "" && f.EnvFile == "":
			return nil, fmt.Errorf("%s: set file or envFile to the path of a file the Pod writes", field)
		case f.EnvFile != "":
			t.file, t.env = f.EnvFile, true
		}
		if !path.IsAbs(t.file) || path.Clean(t.file) != t.file {
			return nil, fmt.Errorf("%s: %q must be an absolute, clean path such as %s/%s", field, t.file, mount, path.Base(t.file))
		}
		if !strings.HasPrefix(t.file, strings.TrimSuffix(mount, "/")+"/") {
			return nil, fmt.Errorf("%s: %s must be in %s, where the Pod mounts its emptyDir volume", field, t.file, mount)
		}
		if !t.env {
			if errs := validation.IsConfigMapKey(path.Base(t.file)); len(errs) > 0 {
				return nil, fmt.Errorf("%s: the file's name %q becomes a key, which %s; rename the file", field, path.Base(t.file), strings.Join(errs, "; "))
			}
		}
		if t.kind != "Secret" && t.kind != "ConfigMap" {
			return nil, fmt.Errorf("%s: kind must be Secret or ConfigMap (got %q)", field, t.kind)
		}
		if !pipeKeyPattern.MatchString(t.key) {
			return nil, fmt.Errorf("%s: key %q must match %s", field, t.key, pipeKeyPattern)
		}
		if keys[t.key] {
			return nil, fmt.Errorf("%s: key %q is used twice; give each file its own key", field, t.key)
		}
		keys[t.key] = true
		if t.name == "" {
			t.name = pipeObjectName(podName, t.key)
		}
		if errs := validation.IsDNS1123Subdomain(t.name); len(errs) > 0 {
			return nil, fmt.Errorf("%s: object name %q: %s", field, t.name, strings.Join(errs, "; "))
		}
		if names[t.kind+"/"+t.name] {
			return nil, fmt.Errorf("%s: %s %q is written by two files; give each its own name", field, t.kind, t.name)
		}
		names[t.kind+"/"+t.name] = true
		targets = append(targets, t)
	}
	return targets, nil
}

// pipeObjectName is the default name of the object a file of the Pod
// podName is copied into: "<podName>.<key>", lower-cased, with "_" made
// "-" and other characters a name cannot hold dropped.
func pipeObjectName(podName, key string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		case r == '_':
			return '-'
		}
		return -1
	}, podName+"."+key)
	return strings.Trim(name, "-.")
}

// pipePodState reads a pipe Pod's status: running once the Pod runs (its
// init containers are done) or container is running; otherwise waiting
// says what it waits for, or failure why it never will run.
func pipePodState(pod *unstructured.Unstructured, container string) (running bool, waiting, failure string) {
	var status corev1.PodStatus
	raw, _, _ := unstructured.NestedMap(pod.Object, "status")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
		return false, "", fmt.Sprintf("its status cannot be read: %v", err)
	}
	for _, c := range status.ContainerStatuses {
		if c.Name == container && c.State.Running != nil {
			return true, "", ""
		}
	}
	switch status.Phase {
	case corev1.PodRunning:
		return true, "", ""
	case corev1.PodSucceeded:
		return false, "", fmt.Sprintf("the Pod finished before its files were read; its container %q must keep running "+
			"(for example `sleep infinity`) until Annex deletes the Pod", container)
	case corev1.PodFailed:
		why := "the Pod failed"
		if status.Reason != "" || status.Message != "" {
			why += ": " + strings.TrimPrefix(status.Reason+": "+status.Message, ": ")
		}
		for _, c := range status.InitContainerStatuses {
			if t := c.State.Terminated; t != nil && t.ExitCode != 0 {
				why += fmt.Sprintf("; init container %q exited with code %d (%s)", c.Name, t.ExitCode, t.Reason)
			}
		}
		return false, "", why + "; see the logs of its init containers and fix the pipe's Pod"
	}
	waiting = "phase " + string(status.Phase)
	if status.Phase == "" {
		waiting = "phase Pending"
	}
	for _, c := range status.InitContainerStatuses {
		if w := c.State.Waiting; w != nil && w.Reason != "" {
			waiting += fmt.Sprintf("; init container %q: %s", c.Name, w.Reason)
			break
		}
	}
	return false, waiting, ""
}

// pipeObject returns the Secret or ConfigMap t names, in namespace,
// holding data.
func pipeObject(t pipeTarget, namespace string, data []byte) (*unstructured.Unstructured, error) {
	entries := map[string]string{path.Base(t.file): string(data)}
	if t.env {
		var err error
		if entries, err = parseEnvFile(data); err != nil {
			return nil, err
		}
	}
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetAPIVersion("v1")
	obj.SetKind(t.kind)
	obj.SetNamespace(namespace)
	obj.SetName(t.name)
	text, binary := map[string]any{}, map[string]any{}
	for k, v := range entries {
		switch {
		case t.kind == "Secret", !utf8.ValidString(v):
			binary[k] = base64.StdEncoding.EncodeToString([]byte(v))
		default:
			text[k] = v
		}
	}
	if t.kind == "Secret" {
		obj.Object["type"] = string(corev1.SecretTypeOpaque)
		obj.Object["data"] = binary
		return obj, nil
	}
	if len(text) > 0 {
		obj.Object["data"] = text
	}
	if len(binary) > 0 {
		obj.Object["binaryData"] = binary
	}
	return obj, nil
}

// parseEnvFile reads KEY=VALUE lines, as kubectl's --from-env-file does: a
// byte-order mark, blank lines and lines starting with "#" are skipped,
// leading blanks are dropped, the value is everything after the first
// "=" (no quotes are removed), and a later line overrides an earlier one
// with the same key. A key must be a valid Secret and ConfigMap key.
func parseEnvFile(data []byte) (map[string]string, error) {
	entries := map[string]string{}
	scanner := bufio.NewScanner(bytes.NewReader(bytes.TrimPrefix(data, []byte("\uFEFF"))))
	scanner.Buffer(nil, PipeFileLimit+1)
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimLeft(strings.TrimSuffix(scanner.Text(), "\r"), " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			// The line is not quoted: it may hold a secret.
			return nil, fmt.Errorf("line %d: has no \"=\"; write KEY=VALUE", n)
		}
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return nil, fmt.Errorf("line %d: the key is not valid: %s", n, strings.Join(errs, "; "))
		}
		entries[key] = value
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, errors.New("holds no KEY=VALUE line")
	}
	return entries, nil
}
