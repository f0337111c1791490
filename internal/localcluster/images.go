package localcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// Images without a container runtime. kwok's fake nodes run no
// containers: a Pod is Running, but nothing executes. For the images the
// project builds itself (Options.Images), the cluster plays the kubelet:
//
//   - For every container of a scheduled Pod (spec.nodeName set, not
//     deleted, not finished) whose image is <Repository>:<tag> of an
//     Image, it runs Image.Command(tag) followed by the container's args
//     as a process on this machine, in its own process group, its output
//     in Dir/logs/pods/<namespace>_<pod>_<container>.log.
//   - The process authenticates as the Pod's ServiceAccount, with a token
//     from the TokenRequest API bound to the Pod (so it dies with the Pod)
//     and refreshed before it expires, through a kubeconfig named by
//     KUBECONFIG. It has exactly the access RBAC gives that ServiceAccount,
//     as in a real cluster; it never sees the admin's credentials.
//   - Its environment is the container's env: plain values and the
//     downward API's fieldRefs (metadata.name, .namespace, .uid,
//     .labels['…'], .annotations['…'], spec.nodeName,
//     spec.serviceAccountName), plus PATH. A container using what the
//     runner does not provide (envFrom, other valueFrom sources) is not
//     run, and the log says which field.
//   - A process that exits is restarted with a backoff (1 s doubling to
//     30 s), as a kubelet restarts a container. It is stopped (SIGTERM,
//     then SIGKILL after 10 s) when its Pod is deleted or finishes, or when
//     the container's image changes, and when the cluster stops.
//   - Its Secret and ConfigMap volumes are files in a folder, its
//     containerPorts ports on 127.0.0.1 (Image.Local tells the program
//     where), and once it listens the Services selecting its Pod have it
//     as their endpoint, so the API server reaches its webhooks
//     (serving.go).
//
// The Pod's status stays kwok's: Running and Ready whatever the process
// does. Each start and stop is one line in Options.Log ("images: …").
const (
	podLogsDir         = "pods"
	imageTokenTTL      = time.Hour
	imageTokenRefresh  = 40 * time.Minute // as a kubelet: at 2/3 of the TTL
	imageRestartMin    = time.Second
	imageRestartMax    = 30 * time.Second
	imageResyncPeriod  = 5 * time.Minute
	imageRunnerSubdir  = "images" // Dir/images/<process>/: kubeconfig and token
	imageKubeconfig    = "kubeconfig"
	imageTokenFile     = "token"
	serviceAccountUser = "system:serviceaccount:"
)

// Image is an image the local cluster runs as a process on this machine
// (see above).
type Image struct {
	// Repository is the image's name without tag, e.g.
	// annex.dev/example-operator.
	Repository string
	// Command returns the program and its first arguments that stand for
	// the image at tag; the container's args follow them. The container's
	// command is not used: it names a path inside the image.
	Command func(tag string) []string
	// Local, when set, returns the arguments (after Command's, before the
	// container's) that tell the program where its volumes and ports are
	// on this machine (serving.go).
	Local func(Local) []string
}

// imageRunner runs the containers of Options.Images; see above.
type imageRunner struct {
	cs       kubernetes.Interface
	images   []Image
	dir      string // Dir
	server   string
	caPEM    []byte
	logf     func(format string, args ...any)
	pods     corelisters.PodLister
	services corelisters.ServiceLister
	queue    workqueue.TypedRateLimitingInterface[string]

	mu    sync.Mutex
	procs map[string]*imageProcess // by <namespace>/<pod>/<container>

	cancel context.CancelFunc
	done   chan struct{}
}

// imageProcess is one container running as a local process.
type imageProcess struct {
	podUID string
	image  string
	cancel context.CancelFunc
	done   chan struct{}
	// services is signalled when a Service of the Pod's namespace
	// changes, so that the process's endpoints follow (serving.go).
	services chan struct{}
}

// launch is everything needed to start one container's process.
type launch struct {
	key            string // <namespace>/<pod>/<container>
	pod            *corev1.Pod
	image          string
	argv           []string
	env            []string
	serviceAccount string
	workDir        string
	logPath        string
	ports          []corev1.ContainerPort
	local          Local
	volumes        []volumeFiles
	services       chan struct{}
}

// startImages starts the image runner, which runs until stopImagesLocked.
func (c *Cluster) startImages() error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(c.opts.Dir, "logs", podLogsDir), 0o700); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, imageResyncPeriod)
	podInformer := factory.Core().V1().Pods()
	serviceInformer := factory.Core().V1().Services()
	r := &imageRunner{
		cs:       cs,
		images:   c.opts.Images,
		dir:      c.opts.Dir,
		server:   c.serverURL(),
		caPEM:    c.creds.caPEM,
		logf:     func(format string, args ...any) { fmt.Fprintf(c.opts.Log, "images: "+format+"\n", args...) },
		pods:     podInformer.Lister(),
		services: serviceInformer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueue(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](storageRetryBase, storageRetryMax)),
		procs:  map[string]*imageProcess{},
		cancel: cancel,
		done:   make(chan struct{}),
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			r.queue.Add(key)
		}
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		cancel()
		return err
	}
	servicesChanged := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			r.servicesChanged(key[:max(strings.IndexByte(key, '/'), 0)])
		}
	}
	if _, err := serviceInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    servicesChanged,
		UpdateFunc: func(_, obj any) { servicesChanged(obj) },
		DeleteFunc: servicesChanged,
	}); err != nil {
		cancel()
		return err
	}
	if err := r.deleteStaleEndpoints(runCtx); err != nil {
		cancel()
		return fmt.Errorf("deleting the EndpointSlices of an earlier run: %w", err)
	}
	c.images = r
	factory.Start(runCtx.Done())
	go func() {
		defer close(r.done)
		defer factory.Shutdown()
		for processNext(runCtx, r.queue, r.sync, r.logf) {
		}
	}()
	var repos []string
	for _, img := range r.images {
		repos = append(repos, img.Repository)
	}
	r.logf("Pods of %s run as local processes (logs in %s)", strings.Join(repos, ", "), filepath.Join(c.opts.Dir, "logs", podLogsDir))
	return nil
}

// stopImagesLocked stops the runner and every process it runs.
func (c *Cluster) stopImagesLocked() {
	r := c.images
	if r == nil {
		return
	}
	r.cancel()
	r.queue.ShutDown()
	<-r.done
	r.mu.Lock()
	procs := r.procs
	r.procs = map[string]*imageProcess{}
	r.mu.Unlock()
	for _, p := range procs {
		p.cancel()
	}
	for key, p := range procs {
		<-p.done
		r.logf("stopped %s of Pod %s (the cluster stops)", p.image, podOf(key))
	}
	c.images = nil
}

// sync makes the processes of one Pod match it: it stops those whose Pod
// is gone, replaced, finished or deleted, or whose image changed, and
// starts those missing.
func (r *imageRunner) sync(ctx context.Context, podKey string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(podKey)
	if err != nil {
		return nil
	}
	pod, err := r.pods.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	want := map[string]string{} // container → image
	if pod != nil && runnable(pod) {
		for _, ctr := range pod.Spec.Containers {
			if _, _, ok := r.match(ctr.Image); ok {
				want[ctr.Name] = ctr.Image
			}
		}
	}
	r.mu.Lock()
	var stopping []*imageProcess
	var stopped []string
	for key, p := range r.procs {
		ctrName, ok := strings.CutPrefix(key, podKey+"/")
		if !ok || strings.Contains(ctrName, "/") {
			continue
		}
		if img, keep := want[ctrName]; keep && pod != nil && p.podUID == string(pod.UID) && img == p.image {
			delete(want, ctrName)
			continue
		}
		p.cancel()
		stopping = append(stopping, p)
		stopped = append(stopped, fmt.Sprintf("stopped %s of Pod %s (%s)", p.image, podKey, whyStopped(pod, p, want[ctrName])))
		delete(r.procs, key)
	}
	r.mu.Unlock()
	for i, p := range stopping {
		<-p.done
		r.logf("%s", stopped[i])
	}
	if len(want) == 0 {
		return nil
	}
	for _, ctr := range pod.Spec.Containers {
		if _, ok := want[ctr.Name]; !ok {
			continue
		}
		l, err := r.launchFor(pod, ctr)
		if err != nil {
			// The Pod must change before another try helps.
			r.logf("cannot run container %s of Pod %s: %v", ctr.Name, podKey, err)
			continue
		}
		r.start(ctx, l)
	}
	return nil
}

// runnable reports whether a kubelet would run the Pod's containers:
// scheduled, not being deleted, not finished.
func runnable(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func whyStopped(pod *corev1.Pod, p *imageProcess, image string) string {
	switch {
	case pod == nil:
		return "the Pod is gone"
	case string(pod.UID) != p.podUID:
		return "the Pod was replaced"
	case pod.DeletionTimestamp != nil:
		return "the Pod is being deleted"
	case !runnable(pod):
		return "the Pod finished"
	case image != "" && image != p.image:
		return "the image is now " + image
	}
	return "the container left the Pod"
}

// podOf returns <namespace>/<pod> of a process key.
func podOf(key string) string { return key[:strings.LastIndexByte(key, '/')] }

// match returns the Image an image reference runs and its tag.
func (r *imageRunner) match(ref string) (Image, string, bool) {
	repo, tag, ok := splitTag(ref)
	if !ok {
		return Image{}, "", false
	}
	for _, img := range r.images {
		if img.Repository == repo {
			return img, tag, true
		}
	}
	return Image{}, "", false
}

// splitTag splits repository:tag; references by digest have no tag.
func splitTag(ref string) (repo, tag string, ok bool) {
	i := strings.LastIndexByte(ref, ':')
	if i < 0 || strings.Contains(ref[i:], "/") || strings.Contains(ref, "@") {
		return "", "", false
	}
	return ref[:i], ref[i+1:], true
}

// launchFor prepares the process of one container; an error names what
// the runner cannot provide.
func (r *imageRunner) launchFor(pod *corev1.Pod, ctr corev1.Container) (launch, error) {
	img, tag, _ := r.match(ctr.Image)
	env, err := containerEnv(pod, ctr)
	if err != nil {
		return launch{}, err
	}
	sa := cmp.Or(pod.Spec.ServiceAccountName, "default")
	base := pod.Namespace + "_" + pod.Name + "_" + ctr.Name
	workDir := filepath.Join(r.dir, imageRunnerSubdir, base)
	local, volumes, err := localFor(pod, ctr, workDir)
	if err != nil {
		return launch{}, err
	}
	argv := img.Command(tag)
	if img.Local != nil {
		argv = append(argv, img.Local(local)...)
	}
	argv = append(argv, ctr.Args...)
	if len(argv) == 0 {
		return launch{}, fmt.Errorf("image %s: Command returned no program", ctr.Image)
	}
	return launch{
		key:            pod.Namespace + "/" + pod.Name + "/" + ctr.Name,
		pod:            pod.DeepCopy(),
		image:          ctr.Image,
		argv:           argv,
		env:            env,
		serviceAccount: sa,
		workDir:        workDir,
		logPath:        filepath.Join(r.dir, "logs", podLogsDir, base+".log"),
		ports:          ctr.Ports,
		local:          local,
		volumes:        volumes,
		services:       make(chan struct{}, 1),
	}, nil
}

// containerEnv resolves a container's environment as a kubelet would,
// for the sources the runner supports (see above).
func containerEnv(pod *corev1.Pod, ctr corev1.Container) ([]string, error) {
	if len(ctr.EnvFrom) > 0 {
		return nil, errors.New("envFrom is not supported by annex dev's image runner")
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	for i, e := range ctr.Env {
		value := e.Value
		if from := e.ValueFrom; from != nil {
			if from.FieldRef == nil {
				return nil, fmt.Errorf("env[%d] %s: only valueFrom.fieldRef is supported by annex dev's image runner", i, e.Name)
			}
			v, err := podField(pod, from.FieldRef.FieldPath)
			if err != nil {
				return nil, fmt.Errorf("env[%d] %s: %w", i, e.Name, err)
			}
			value = v
		}
		env = append(env, e.Name+"="+value)
	}
	return env, nil
}

// podField returns a downward-API field of pod.
func podField(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.annotations": pod.Annotations, "metadata.labels": pod.Labels} {
		if rest, ok := strings.CutPrefix(path, prefix+"['"); ok {
			if key, ok := strings.CutSuffix(rest, "']"); ok {
				return m[key], nil
			}
		}
	}
	return "", fmt.Errorf("fieldRef %q is not supported by annex dev's image runner", path)
}

// start runs l's process until its context is cancelled.
func (r *imageRunner) start(ctx context.Context, l launch) {
	ctx, cancel := context.WithCancel(ctx)
	p := &imageProcess{podUID: string(l.pod.UID), image: l.image, cancel: cancel, done: make(chan struct{}), services: l.services}
	r.mu.Lock()
	r.procs[l.key] = p
	r.mu.Unlock()
	r.logf("running %s for Pod %s/%s%s as ServiceAccount %s/%s: %s (log %s)",
		l.image, l.pod.Namespace, l.pod.Name, ownerNote(l.pod), l.pod.Namespace, l.serviceAccount,
		strings.Join(l.argv, " "), l.logPath)
	go func() {
		defer close(p.done)
		r.supervise(ctx, l)
	}()
}

// ownerNote names the Deployment of a Pod made by a ReplicaSet of one.
func ownerNote(pod *corev1.Pod) string {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return ""
	}
	if hash := pod.Labels["pod-template-hash"]; hash != "" {
		if d, ok := strings.CutSuffix(ref.Name, "-"+hash); ok {
			return " (Deployment " + pod.Namespace + "/" + d + ")"
		}
	}
	return " (ReplicaSet " + pod.Namespace + "/" + ref.Name + ")"
}

// supervise runs l's process, restarting it with a backoff when it exits,
// until ctx ends.
func (r *imageRunner) supervise(ctx context.Context, l launch) {
	backoff := imageRestartMin
	for {
		started := time.Now()
		err := r.runOnce(ctx, l)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > 10*imageRestartMax {
			backoff = imageRestartMin
		}
		r.logf("%s of Pod %s/%s: %v; restarting in %s (log %s)", l.image, l.pod.Namespace, l.pod.Name, err, backoff, l.logPath)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, imageRestartMax)
	}
}

// runOnce writes the process's credentials, starts it, refreshes its
// token while it runs, and returns why it ended: its exit, or nil when ctx
// ended and the process was stopped.
func (r *imageRunner) runOnce(ctx context.Context, l launch) error {
	if err := os.MkdirAll(l.workDir, 0o700); err != nil {
		return err
	}
	if err := r.writeCredentials(ctx, l); err != nil {
		return err
	}
	if err := r.writeVolumes(ctx, l); err != nil {
		return err
	}
	cmd := exec.Command(l.argv[0], l.argv[1:]...)
	cmd.Dir = l.workDir
	cmd.Env = append(slices.Clone(l.env), "KUBECONFIG="+filepath.Join(l.workDir, imageKubeconfig))
	p, err := startCommand(l.key, cmd, l.logPath)
	if err != nil {
		return err
	}
	if len(l.local.Ports) > 0 {
		served := make(chan struct{})
		defer func() {
			<-served
			// ctx may have ended: the endpoints go all the same.
			cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := r.publishEndpoints(cleanup, l, false); err != nil {
				r.logf("%s of Pod %s/%s: removing its endpoints: %v", l.image, l.pod.Namespace, l.pod.Name, err)
			}
		}()
		go func() {
			defer close(served)
			r.serve(ctx, l, p.done)
		}()
	}
	refresh := time.NewTicker(imageTokenRefresh)
	defer refresh.Stop()
	volumes := time.NewTicker(volumeRefresh)
	defer volumes.Stop()
	for {
		select {
		case <-volumes.C:
			if err := r.writeVolumes(ctx, l); err != nil && ctx.Err() == nil {
				r.logf("%s of Pod %s/%s: refreshing its volumes: %v (trying again in %s)", l.image, l.pod.Namespace, l.pod.Name, err, volumeRefresh)
			}
		case <-p.done:
			if p.err == nil {
				return errors.New("exited")
			}
			return fmt.Errorf("exited (%v)", p.err)
		case <-ctx.Done():
			return p.stop(stopGrace)
		case <-refresh.C:
			if err := r.writeToken(ctx, l); err != nil && ctx.Err() == nil {
				r.logf("%s of Pod %s/%s: refreshing its token: %v (trying again in %s)", l.image, l.pod.Namespace, l.pod.Name, err, imageTokenRefresh)
			}
		}
	}
}

// writeCredentials writes the process's token and a kubeconfig that reads
// it (client-go re-reads a token file every minute).
func (r *imageRunner) writeCredentials(ctx context.Context, l launch) error {
	if err := r.writeToken(ctx, l); err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	user := serviceAccountUser + l.pod.Namespace + ":" + l.serviceAccount
	cfg.Clusters[kubeconfigName] = &clientcmdapi.Cluster{Server: r.server, CertificateAuthorityData: r.caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(l.workDir, imageTokenFile)}
	cfg.Contexts[kubeconfigName] = &clientcmdapi.Context{Cluster: kubeconfigName, AuthInfo: user, Namespace: l.pod.Namespace}
	cfg.CurrentContext = kubeconfigName
	return clientcmd.WriteToFile(*cfg, filepath.Join(l.workDir, imageKubeconfig))
}

// writeToken requests a token of the Pod's ServiceAccount bound to the Pod
// and replaces the token file with it.
func (r *imageRunner) writeToken(ctx context.Context, l launch) error {
	tr, err := r.cs.CoreV1().ServiceAccounts(l.pod.Namespace).CreateToken(ctx, l.serviceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(int64(imageTokenTTL / time.Second)),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: l.pod.Name, UID: l.pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of ServiceAccount %s/%s: %w", l.pod.Namespace, l.serviceAccount, err)
	}
	path := filepath.Join(l.workDir, imageTokenFile)
	if err := os.WriteFile(path+".new", []byte(tr.Status.Token), 0o600); err != nil {
		return err
	}
	return os.Rename(path+".new", path)
}
