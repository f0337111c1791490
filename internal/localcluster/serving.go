package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/annex-platform/annex/internal/names"
)

// Serving from a local process. A container of an image the runner runs
// may serve something the API server calls through a Service — an
// admission or conversion webhook, an aggregated API. In a real cluster
// the process listens on the Pod's IP at its containerPort, reads its
// serving certificate from a Secret volume, and the endpointslice
// controller publishes the Pod's IP as the Service's endpoint. Here:
//
//   - Each Secret or ConfigMap volume the container mounts is written, key
//     by key (or its items), to Dir/images/<process>/volumes/<volume>/,
//     before the process starts and again every volumeRefresh while it runs
//     (a kubelet refreshes them within a minute or so), so a renewed
//     certificate reaches the process. A Secret or ConfigMap that does not
//     exist (and is not optional) keeps the process from starting, as it
//     keeps a real container in ContainerCreating; the runner retries.
//   - Each containerPort of the container gets a free port on 127.0.0.1.
//   - Image.Local tells the process both: it returns the arguments that
//     point the program at the folders (Local.Dirs, by mountPath) and the
//     ports (Local.Ports, by containerPort).
//   - Once the process accepts connections on its ports, the runner
//     publishes, for each Service of the Pod's namespace that selects the
//     Pod, an EndpointSlice of addressType FQDN with the address 127.0.0.1
//     and, for each Service port whose targetPort (a number or a
//     containerPort's name) is one of those containerPorts, the local port
//     under the Service port's name. The API server runs with
//     --enable-aggregator-routing=true, so it calls a webhook's or an
//     APIService's Service through its EndpointSlices, and reaches the
//     process (an IPv4 slice refuses loopback addresses; an FQDN one
//     does not). It verifies the certificate against the Service's name,
//     <service>.<namespace>.svc, as in any cluster.
//   - The slices are labelled endpointslice.kubernetes.io/managed-by:
//     dev-images.annex.dev and owned by the Pod; they are deleted when the
//     process stops, and those of an earlier run when the runner starts.
//     kube-controller-manager runs without its endpointslice controller:
//     it would publish the fake Pod IPs kwok assigns, where nothing
//     listens, and the API server prefers a Service's IPv4 slices. So a
//     Service under annex dev has endpoints only through this runner.
const (
	volumeRefresh           = time.Minute
	imageVolumesSubdir      = "volumes"
	sliceManagedBy          = "dev-images.annex.dev"
	slicePodLabel           = "annex.dev/dev-pod-uid"
	servingProbeInterval    = 200 * time.Millisecond
	servingAddress          = "127.0.0.1"
	endpointSliceNameLength = 253
)

// Local is where, on this machine, a container's process finds what the
// container would find at fixed places in a Pod.
type Local struct {
	// Dirs maps the mountPath of each Secret and ConfigMap volumeMount
	// of the container to the local folder (or, for a subPath, the file)
	// holding it.
	Dirs map[string]string
	// Ports maps each containerPort of the container to the port on
	// 127.0.0.1 the process is to listen on instead.
	Ports map[int32]int
}

// volumeFiles is one volume the runner writes for a process.
type volumeFiles struct {
	name     string
	dir      string
	secret   string // or
	config   string
	items    []corev1.KeyToPath
	optional bool
}

// localFor picks the container's local folders and ports.
func localFor(pod *corev1.Pod, ctr corev1.Container, workDir string) (Local, []volumeFiles, error) {
	local := Local{Dirs: map[string]string{}, Ports: map[int32]int{}}
	var vols []volumeFiles
	byName := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		byName[v.Name] = v
	}
	written := map[string]bool{}
	for _, m := range ctr.VolumeMounts {
		v, ok := byName[m.Name]
		if !ok || v.Secret == nil && v.ConfigMap == nil {
			continue
		}
		dir := filepath.Join(workDir, imageVolumesSubdir, v.Name)
		local.Dirs[m.MountPath] = filepath.Join(dir, m.SubPath)
		if written[v.Name] {
			continue
		}
		written[v.Name] = true
		vf := volumeFiles{name: v.Name, dir: dir}
		if s := v.Secret; s != nil {
			vf.secret, vf.items, vf.optional = s.SecretName, s.Items, ptr.Deref(s.Optional, false)
		} else {
			cm := v.ConfigMap
			vf.config, vf.items, vf.optional = cm.Name, cm.Items, ptr.Deref(cm.Optional, false)
		}
		vols = append(vols, vf)
	}
	for _, p := range ctr.Ports {
		if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
			continue
		}
		port, err := freePort()
		if err != nil {
			return Local{}, nil, err
		}
		local.Ports[p.ContainerPort] = port
	}
	return local, vols, nil
}

// writeVolumes writes the Secret and ConfigMap volumes of l into their
// folders, replacing each file that changed.
func (r *imageRunner) writeVolumes(ctx context.Context, l launch) error {
	for _, v := range l.volumes {
		var data map[string][]byte
		what := "Secret " + l.pod.Namespace + "/" + v.secret
		if v.secret != "" {
			s, err := r.cs.CoreV1().Secrets(l.pod.Namespace).Get(ctx, v.secret, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err) && v.optional:
			case err != nil:
				return fmt.Errorf("volume %s: %s: %w", v.name, what, err)
			default:
				data = s.Data
			}
		} else {
			what = "ConfigMap " + l.pod.Namespace + "/" + v.config
			cm, err := r.cs.CoreV1().ConfigMaps(l.pod.Namespace).Get(ctx, v.config, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err) && v.optional:
			case err != nil:
				return fmt.Errorf("volume %s: %s: %w", v.name, what, err)
			default:
				data = map[string][]byte{}
				for k, s := range cm.Data {
					data[k] = []byte(s)
				}
				maps.Copy(data, cm.BinaryData)
			}
		}
		files := map[string][]byte{}
		if len(v.items) == 0 {
			maps.Copy(files, data)
		}
		for _, item := range v.items {
			content, ok := data[item.Key]
			if !ok && data != nil {
				return fmt.Errorf("volume %s: %s has no key %q", v.name, what, item.Key)
			}
			files[item.Path] = content
		}
		for path, content := range files {
			if err := writeFileIfChanged(filepath.Join(v.dir, path), content); err != nil {
				return fmt.Errorf("volume %s: %w", v.name, err)
			}
		}
	}
	return nil
}

// writeFileIfChanged replaces path with content (through a rename, so a
// reader sees the old file or the new one) unless it holds it already.
func writeFileIfChanged(path string, content []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path+".new", content, 0o600); err != nil {
		return err
	}
	return os.Rename(path+".new", path)
}

// waitServing returns once the process accepts connections on each of
// l's local ports, or an error when ctx ends or the process exits first.
func waitServing(ctx context.Context, l launch, exited <-chan struct{}) error {
	for _, port := range l.local.Ports {
		addr := net.JoinHostPort(servingAddress, strconv.Itoa(port))
		for {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-exited:
				return errors.New("exited before serving")
			case <-time.After(servingProbeInterval):
			}
		}
	}
	return nil
}

// publishEndpoints makes the EndpointSlices of l's Pod match the Services
// of its namespace that select it (see above); with serving false, it
// deletes them all.
func (r *imageRunner) publishEndpoints(ctx context.Context, l launch, serving bool) error {
	want := map[string]*discoveryv1.EndpointSlice{}
	if serving && len(l.local.Ports) > 0 {
		services, err := r.services.Services(l.pod.Namespace).List(labels.Everything())
		if err != nil {
			return err
		}
		for _, svc := range services {
			if s := endpointSliceFor(svc, l); s != nil {
				want[s.Name] = s
			}
		}
	}
	slicesAPI := r.cs.DiscoveryV1().EndpointSlices(l.pod.Namespace)
	have, err := slicesAPI.List(ctx, metav1.ListOptions{LabelSelector: slicePodLabel + "=" + string(l.pod.UID)})
	if err != nil {
		return err
	}
	for i := range have.Items {
		cur := &have.Items[i]
		s, keep := want[cur.Name]
		if !keep {
			if err := slicesAPI.Delete(ctx, cur.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			r.logf("Service %s/%s: endpoint of Pod %s removed", cur.Namespace, cur.Labels[discoveryv1.LabelServiceName], l.pod.Name)
			continue
		}
		delete(want, cur.Name)
		if slices.EqualFunc(cur.Ports, s.Ports, portEqual) && len(cur.Endpoints) == 1 && ptr.Deref(cur.Endpoints[0].Conditions.Ready, false) &&
			cur.Labels[discoveryv1.LabelServiceName] == s.Labels[discoveryv1.LabelServiceName] {
			continue
		}
		s.ResourceVersion = cur.ResourceVersion
		if _, err := slicesAPI.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	for _, s := range want {
		if _, err := slicesAPI.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return err
		}
		var ports []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s→%s:%d", ptr.Deref(p.Name, ""), servingAddress, ptr.Deref(p.Port, 0)))
		}
		r.logf("Service %s/%s: Pod %s serves port %s (EndpointSlice %s)", s.Namespace, s.Labels[discoveryv1.LabelServiceName], l.pod.Name, strings.Join(ports, ", "), s.Name)
	}
	return nil
}

func portEqual(a, b discoveryv1.EndpointPort) bool {
	return ptr.Deref(a.Name, "") == ptr.Deref(b.Name, "") && ptr.Deref(a.Port, 0) == ptr.Deref(b.Port, 0)
}

// endpointSliceFor returns the EndpointSlice that points svc at l's
// process, or nil when svc does not select l's Pod or none of its ports
// targets one of the container's ports.
func endpointSliceFor(svc *corev1.Service, l launch) *discoveryv1.EndpointSlice {
	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(l.pod.Labels)) {
		return nil
	}
	var ports []discoveryv1.EndpointPort
	for _, sp := range svc.Spec.Ports {
		if sp.Protocol != "" && sp.Protocol != corev1.ProtocolTCP {
			continue
		}
		target, ok := l.containerPort(sp.TargetPort, sp.Port)
		if !ok {
			continue
		}
		ports = append(ports, discoveryv1.EndpointPort{
			Name: ptr.To(sp.Name), Port: ptr.To(int32(l.local.Ports[target])), Protocol: ptr.To(corev1.ProtocolTCP),
		})
	}
	if len(ports) == 0 {
		return nil
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: l.pod.Namespace,
			Name:      names.Bounded(svc.Name+"-"+l.pod.Name, endpointSliceNameLength),
			Labels: map[string]string{
				discoveryv1.LabelServiceName: svc.Name,
				discoveryv1.LabelManagedBy:   sliceManagedBy,
				slicePodLabel:                string(l.pod.UID),
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: l.pod.Name, UID: l.pod.UID}},
		},
		AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{servingAddress},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: l.pod.Namespace, Name: l.pod.Name, UID: l.pod.UID},
			NodeName:   ptr.To(l.pod.Spec.NodeName),
		}},
		Ports: ports,
	}
}

// containerPort resolves a Service port's targetPort (its port when
// unset) to one of the container's ports with a local port.
func (l launch) containerPort(target intstr.IntOrString, servicePort int32) (int32, bool) {
	if target.Type == intstr.String && target.StrVal != "" {
		for _, p := range l.ports {
			if p.Name == target.StrVal {
				_, ok := l.local.Ports[p.ContainerPort]
				return p.ContainerPort, ok
			}
		}
		return 0, false
	}
	n := target.IntVal
	if n == 0 {
		n = servicePort
	}
	_, ok := l.local.Ports[n]
	return n, ok
}

// deleteStaleEndpoints deletes the EndpointSlices an earlier run of the
// runner published: their processes are gone.
func (r *imageRunner) deleteStaleEndpoints(ctx context.Context) error {
	list, err := r.cs.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelManagedBy + "=" + sliceManagedBy})
	if err != nil {
		return err
	}
	for _, s := range list.Items {
		if err := r.cs.DiscoveryV1().EndpointSlices(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// serve publishes l's endpoints once its process serves, and again when a
// Service of its namespace changes, until ctx ends or the process exits.
// A failed write is retried at the next change or after
// servingRetry.
func (r *imageRunner) serve(ctx context.Context, l launch, exited <-chan struct{}) {
	if err := waitServing(ctx, l, exited); err != nil {
		return
	}
	for {
		retry := (<-chan time.Time)(nil)
		if err := r.publishEndpoints(ctx, l, true); err != nil && ctx.Err() == nil {
			r.logf("%s of Pod %s/%s: publishing its endpoints: %v (retrying)", l.image, l.pod.Namespace, l.pod.Name, err)
			retry = time.After(servingRetry)
		}
		select {
		case <-ctx.Done():
			return
		case <-exited:
			return
		case <-l.services:
		case <-retry:
		}
	}
}

// servingRetry is how soon a failed publication of endpoints is retried.
const servingRetry = 5 * time.Second

// servicesChanged tells the processes of namespace ns that a Service
// there changed.
func (r *imageRunner) servicesChanged(ns string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, p := range r.procs {
		if strings.HasPrefix(key, ns+"/") {
			select {
			case p.services <- struct{}{}:
			default:
			}
		}
	}
}
