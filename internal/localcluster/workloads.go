package localcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"
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
			// Nodes get no pod CIDRs: kwok's pods need none. No
			// EndpointSlices of kwok's fake Pod IPs, where nothing
			// listens: the image runner publishes the endpoints of the
			// processes it runs (serving.go).
			"--controllers=*,-nodeipam,-endpointslice-controller",
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
