package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The fake nodes look like the nodes a kubelet registers, so that charts
// whose Pods select `kubernetes.io/os: linux`, spread over zones or request
// a few CPUs schedule as they would on a real cluster.
const (
	// region is the topology.kubernetes.io/region of every fake node.
	region = "local"
	// instanceType is the node.kubernetes.io/instance-type of every fake
	// node.
	instanceType = "annex-fake"
)

// zones are the topology.kubernetes.io/zone values the fake nodes take in
// turn, so that topology spread constraints by zone have zones to spread
// over.
var zones = []string{region + "-a", region + "-b", region + "-c"}

// DefaultNodeAllocatable is what each fake node offers the scheduler when
// Options.NodeAllocatable leaves a resource out: enough for the requests
// of real charts (a few CPUs and GiB per Pod) and more Pods than a
// kubelet's default 110.
func DefaultNodeAllocatable() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
}

// nodeName is the name of the i-th fake node, from 1.
func nodeName(i int) string { return "annex-node-" + strconv.Itoa(i) }

// fakeNode is the i-th fake node (from 1), as a kubelet of kubeletVersion
// on this machine's architecture would register it: the well-known labels
// (os, arch, hostname, instance type, zone and region, and the beta
// os/arch ones), node info, and allocatable equal to capacity. kwok
// manages it (the annotation) and keeps what it says.
func fakeNode(i int, allocatable corev1.ResourceList, kubeletVersion string) *corev1.Node {
	name := nodeName(i)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				// The label kwok's own examples give fake nodes.
				"type":                         "kwok",
				corev1.LabelHostname:           name,
				corev1.LabelOSStable:           "linux",
				corev1.LabelArchStable:         runtime.GOARCH,
				"beta.kubernetes.io/os":        "linux",
				"beta.kubernetes.io/arch":      runtime.GOARCH,
				corev1.LabelInstanceTypeStable: instanceType,
				corev1.LabelTopologyZone:       zones[(i-1)%len(zones)],
				corev1.LabelTopologyRegion:     region,
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    allocatable.DeepCopy(),
			Allocatable: allocatable.DeepCopy(),
			NodeInfo: corev1.NodeSystemInfo{
				OperatingSystem: "linux",
				Architecture:    runtime.GOARCH,
				KubeletVersion:  kubeletVersion,
			},
		},
	}
}

// nodeAllocatable is DefaultNodeAllocatable with the resources of want
// in place of the defaults.
func nodeAllocatable(want corev1.ResourceList) corev1.ResourceList {
	out := DefaultNodeAllocatable()
	for name, q := range want {
		out[name] = q
	}
	return out
}

// ensureNodes creates the fake nodes annex-node-1 … annex-node-N that are
// missing, brings the labels, resources and node info of those kept from
// an earlier start up to date (an older Annex registered fewer labels, and
// the resources may have been changed), and waits until kwok has made
// every one Ready.
func (c *Cluster) ensureNodes(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	version, err := cs.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the API server's version for the fake nodes' kubeletVersion: %w", err)
	}
	allocatable := nodeAllocatable(c.opts.NodeAllocatable)
	for i := 1; i <= c.opts.Nodes; i++ {
		node := fakeNode(i, allocatable, version.GitVersion)
		_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = updateNode(ctx, cs, node)
		}
		if err != nil {
			return fmt.Errorf("registering fake node %s: %w", node.Name, err)
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

// updateNode merges want's labels into the existing node and sets its
// capacity, allocatable and node info, which kwok then keeps.
func updateNode(ctx context.Context, cs kubernetes.Interface, want *corev1.Node) error {
	labels, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": want.Labels}})
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, want.Name, types.MergePatchType, labels, metav1.PatchOptions{}); err != nil {
		return err
	}
	status, err := json.Marshal(map[string]any{"status": map[string]any{
		"capacity":    want.Status.Capacity,
		"allocatable": want.Status.Allocatable,
		"nodeInfo": map[string]string{
			"operatingSystem": want.Status.NodeInfo.OperatingSystem,
			"architecture":    want.Status.NodeInfo.Architecture,
			"kubeletVersion":  want.Status.NodeInfo.KubeletVersion,
		},
	}})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Nodes().Patch(ctx, want.Name, types.MergePatchType, status, metav1.PatchOptions{}, "status")
	return err
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
