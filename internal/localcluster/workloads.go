package localcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The processes that make workloads run without a kubelet:
// kube-controller-manager (Deployments make ReplicaSets make Pods, Jobs,
// namespaces are finalized, garbage is collected, Services get endpoints),
// kube-scheduler (Pods get nodes) and kwok (fake nodes are Ready, their
// Pods become Running and Ready, Jobs' Pods complete).
const (
	// kwokNodeAnnotation marks the nodes kwok manages.
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// kwokStagesFile, next to the binaries, holds kwok's stage definitions
	// (hack/tools/kwok/stages writes it).
	kwokStagesFile = "kwok-stages.yaml"
	// workloadsReadyTimeout bounds the wait for the fake nodes to be Ready.
	workloadsReadyTimeout = 60 * time.Second
)

// startWorkloads starts kube-controller-manager, kube-scheduler and kwok
// from binDir against the running API server, creates o.Nodes fake nodes
// unless they exist, and waits until they are Ready.
func (c *Cluster) startWorkloads(ctx context.Context) error {
	kubeconfig := filepath.Join(c.opts.Dir, "pki", "admin.kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	pki := func(name string) string { return filepath.Join(c.opts.Dir, name) }
	bin := func(name string) string { return filepath.Join(c.opts.BinDir, name) }
	procs := []struct {
		name string
		args []string
	}{
		{"kube-controller-manager", []string{
			"--kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=0",
			// Nodes get no pod CIDRs: kwok's pods need none.
			"--controllers=*,-nodeipam",
			"--service-account-private-key-file=" + pki(saKeyFile),
			"--root-ca-file=" + pki(caCertFile),
			"--service-cluster-ip-range=" + c.opts.ServiceClusterIPRange,
		}},
		{"kube-scheduler", []string{
			"--kubeconfig=" + kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1",
			"--secure-port=0",
		}},
		{"kwok", []string{
			"--kubeconfig=" + kubeconfig,
			"--config=" + bin(kwokStagesFile),
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			"--node-ip=127.0.0.1",
		}},
	}
	kwokArgs := &procs[len(procs)-1].args
	if c.opts.PodExecDir == "" {
		*kwokArgs = append(*kwokArgs, "--server-address=127.0.0.1:0")
	} else {
		args, err := c.podExecArgs()
		if err != nil {
			return err
		}
		*kwokArgs = append(*kwokArgs, args...)
	}
	for _, p := range procs {
		fmt.Fprintf(c.opts.Log, "starting %s...\n", p.name)
		child, err := startChild(p.name, bin(p.name), p.args, filepath.Join(c.opts.Dir, "logs", p.name+".log"))
		if err != nil {
			return err
		}
		c.workloads = append(c.workloads, child)
	}
	start := time.Now()
	if err := c.ensureNodes(ctx); err != nil {
		return err
	}
	fmt.Fprintf(c.opts.Log, "%d fake nodes Ready in %.1fs (kube-controller-manager, kube-scheduler, kwok)\n",
		c.opts.Nodes, time.Since(start).Seconds())
	if err := c.startStorage(ctx); err != nil {
		return err
	}
	if len(c.opts.Images) == 0 {
		return nil
	}
	return c.startImages()
}

// ensureNodes creates the fake nodes annex-node-1 … annex-node-N that are
// missing and waits until kwok has made every one Ready.
func (c *Cluster) ensureNodes(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	for i := 1; i <= c.opts.Nodes; i++ {
		node := fakeNode("annex-node-" + strconv.Itoa(i))
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating fake node %s: %w", node.Name, err)
		}
	}
	if err := c.setKubeletPort(ctx, cs); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, workloadsReadyTimeout)
	defer cancel()
	for {
		ready, err := c.readyNodes(ctx, cs)
		if err == nil && ready >= c.opts.Nodes {
			return nil
		}
		for _, p := range c.workloads {
			if p.exited() {
				return fmt.Errorf("%s exited (%v); end of %s:\n%s", p.name, p.err, p.logPath, p.tail(logTailLines))
			}
		}
		select {
		case <-ctx.Done():
			kwok := c.workloads[len(c.workloads)-1]
			return fmt.Errorf("%d of %d fake nodes Ready after %s (last error: %v); end of %s:\n%s",
				ready, c.opts.Nodes, workloadsReadyTimeout, err, kwok.logPath, kwok.tail(logTailLines))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) readyNodes(ctx context.Context, cs kubernetes.Interface) (int, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, nil
}

// fakeNode is a node kwok manages, with room for plenty of pods.
func fakeNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: name},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// stopWorkloadsLocked stops the image runner's processes, the volume
// binder, kwok, kube-scheduler and kube-controller-manager, in that order.
func (c *Cluster) stopWorkloadsLocked() error {
	c.stopImagesLocked()
	c.stopStorageLocked()
	var err error
	for i := len(c.workloads) - 1; i >= 0; i-- {
		p := c.workloads[i]
		err = errors.Join(err, p.stop(stopGrace))
		fmt.Fprintf(c.opts.Log, "%s stopped\n", p.name)
	}
	c.workloads = nil
	return err
}
