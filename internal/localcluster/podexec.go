package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Pod exec without a kubelet: the API server sends pods/exec to the node's
// kubelet endpoint (status.addresses InternalIP and
// status.daemonEndpoints.kubeletEndpoint.Port), which for a fake node is
// kwok's server. kwok answers exec with a ClusterExec rule that runs the
// command locally. Its server is plain HTTPS with a throwaway certificate;
// the API server does not verify it, having no --kubelet-certificate-authority.

// kwokExecFile, in Dir, holds the ClusterExec rule kwok reads with --config.
const kwokExecFile = "kwok-exec.yaml"

// podExecArgs writes the ClusterExec rule for Options.PodExecDir, picks the
// port of kwok's server, and returns kwok's arguments for both.
func (c *Cluster) podExecArgs() ([]string, error) {
	dir, err := filepath.Abs(c.opts.PodExecDir)
	if err != nil {
		return nil, err
	}
	// kwok reads only the documents that follow a "---" line.
	rule := fmt.Sprintf(`---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: local
spec:
  execs:
  - local:
      workDir: %s
`, strconv.Quote(dir))
	path := filepath.Join(c.opts.Dir, kwokExecFile)
	if err := os.WriteFile(path, []byte(rule), 0o600); err != nil {
		return nil, err
	}
	if c.kubeletPort, err = freePort(); err != nil {
		return nil, err
	}
	port := strconv.Itoa(c.kubeletPort)
	return []string{"--config=" + path, "--node-port=" + port, "--server-address=127.0.0.1:" + port}, nil
}

// setKubeletPort points the fake nodes at kwok's server, when it serves
// exec. kwok does so itself only when it first initializes a node, so a
// node kept from an earlier start would still name that start's port.
func (c *Cluster) setKubeletPort(ctx context.Context, cs kubernetes.Interface) error {
	if c.kubeletPort == 0 {
		return nil
	}
	patch := fmt.Appendf(nil, `{"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`, c.kubeletPort)
	for i := 1; i <= c.opts.Nodes; i++ {
		name := nodeName(i)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("pointing fake node %s at kwok's kubelet port %d: %w", name, c.kubeletPort, err)
		}
	}
	return nil
}
