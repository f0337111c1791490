package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/semver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/localcluster"
	"github.com/annex-platform/annex/internal/scheme"
)

// devCluster is one managed cluster `annex dev --clusters` starts.
type devCluster struct {
	name, version string
}

// devClustersNamespace holds the kubeconfig Secrets of the managed
// clusters annex dev registers.
const devClustersNamespace = "annex-system"

// parseDevClusters reads --clusters: a number N (clusters cluster-1 … N,
// alternating between the hub's version and the newest other version built
// in binRoot, so that two clusters differ), or a list of name=version.
func parseDevClusters(flag, hubVersion, binRoot string) ([]devCluster, error) {
	flag = strings.TrimSpace(flag)
	if flag == "" || flag == "0" {
		return nil, nil
	}
	if n, err := strconv.Atoi(flag); err == nil {
		if n < 0 || n > 10 {
			return nil, fmt.Errorf("--clusters %d: between 0 and 10 clusters, please (each runs its own control plane)", n)
		}
		versions := []string{hubVersion}
		if other := newestOtherVersion(binRoot, hubVersion); other != "" {
			versions = append(versions, other)
		}
		out := make([]devCluster, n)
		for i := range out {
			out[i] = devCluster{name: fmt.Sprintf("cluster-%d", i+1), version: versions[i%len(versions)]}
		}
		return out, nil
	}
	var out []devCluster
	seen := map[string]bool{}
	for _, item := range strings.Split(flag, ",") {
		name, version, ok := strings.Cut(strings.TrimSpace(item), "=")
		version = strings.TrimPrefix(version, "v")
		if !ok || name == "" || !semver.IsValid("v"+version) || strings.Count(version, ".") != 2 {
			return nil, fmt.Errorf("--clusters %q: want a number, or name=version pairs such as edge-1=%s,edge-2=1.36.4", flag, hubVersion)
		}
		if seen[name] {
			return nil, fmt.Errorf("--clusters %q: the name %s appears twice", flag, name)
		}
		seen[name] = true
		out = append(out, devCluster{name: name, version: version})
	}
	return out, nil
}

// newestOtherVersion is the highest version other than hubVersion whose
// folder in binRoot holds a control plane that runs workloads.
func newestOtherVersion(binRoot, hubVersion string) string {
	entries, err := os.ReadDir(binRoot)
	if err != nil {
		return ""
	}
	var versions []string
	for _, e := range entries {
		if e.Name() != hubVersion && semver.IsValid("v"+e.Name()) && hasWorkloadBinaries(filepath.Join(binRoot, e.Name())) == nil {
			versions = append(versions, e.Name())
		}
	}
	sort.Slice(versions, func(i, j int) bool { return semver.Compare("v"+versions[i], "v"+versions[j]) > 0 })
	if len(versions) == 0 {
		return ""
	}
	return versions[0]
}

// hasWorkloadBinaries says which binary a local cluster with workloads
// would miss in binDir.
func hasWorkloadBinaries(binDir string) error {
	for _, bin := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"} {
		if _, err := os.Stat(filepath.Join(binDir, bin)); err != nil {
			return fmt.Errorf("%s has no %s: run `hack/build-control-plane.sh %s` to build it (about 15 minutes the first time, once)",
				binDir, bin, filepath.Base(binDir))
		}
	}
	return nil
}

// startDevClusters starts each managed cluster's control plane, with its
// state in dir/clusters/<name>, and registers it with the hub as a
// ManagedCluster whose kubeconfig is the Secret annex-system/<name>-kubeconfig.
// Each has nodes fake nodes offering allocatable, and runs the Pods of
// images as local processes, as the hub does. It returns the started
// clusters, to be stopped by the caller, also when it fails part way.
func startDevClusters(ctx context.Context, hub *rest.Config, clusters []devCluster, dir, binRoot string, nodes int, allocatable corev1.ResourceList, images []localcluster.Image, out io.Writer) ([]*localcluster.Cluster, error) {
	c, err := client.New(hub, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: devClustersNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	var started []*localcluster.Cluster
	for _, dc := range clusters {
		binDir := filepath.Join(binRoot, dc.version)
		if err := hasWorkloadBinaries(binDir); err != nil {
			return started, fmt.Errorf("cluster %s (Kubernetes %s): %w", dc.name, dc.version, err)
		}
		fmt.Fprintf(out, "starting managed cluster %s (Kubernetes %s)...\n", dc.name, dc.version)
		lc, err := localcluster.Start(ctx, localcluster.Options{
			Dir: filepath.Join(dir, "clusters", dc.name), BinDir: binDir, Workloads: true, Nodes: nodes, NodeAllocatable: allocatable,
			Log: prefixWriter{prefix: dc.name + ": ", w: out}, Images: images,
		})
		if err != nil {
			return started, fmt.Errorf("cluster %s: %w", dc.name, err)
		}
		started = append(started, lc)
		if err := registerDevCluster(ctx, c, dc, lc, dir); err != nil {
			return started, err
		}
	}
	return started, nil
}

// registerDevCluster writes the cluster's kubeconfig into a Secret and
// creates (or updates) its ManagedCluster, labelled with its name and
// Kubernetes minor version for profiles to select.
func registerDevCluster(ctx context.Context, c client.Client, dc devCluster, lc *localcluster.Cluster, dir string) error {
	path := filepath.Join(dir, "clusters", dc.name, "kubeconfig")
	if err := lc.WriteKubeconfig(path); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: devClustersNamespace, Name: dc.name + "-kubeconfig"}}
	if err := upsert(ctx, c, secret, func() { secret.Data = map[string][]byte{"kubeconfig": data} }); err != nil {
		return fmt.Errorf("registering cluster %s: %w", dc.name, err)
	}
	minor := strings.Join(strings.SplitN(dc.version, ".", 3)[:2], ".")
	mc := &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: dc.name}}
	return upsert(ctx, c, mc, func() {
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		mc.Labels["annex.dev/dev-cluster"] = "true"
		mc.Labels["annex.dev/kubernetes-minor"] = minor
		mc.Spec.KubeconfigSecretRef = v1alpha1.KubeconfigSecretReference{Namespace: devClustersNamespace, Name: secret.Name, Key: "kubeconfig"}
	})
}

// upsert creates obj after mutate, or reads it and updates it after mutate.
func upsert(ctx context.Context, c client.Client, obj client.Object, mutate func()) error {
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	switch {
	case apierrors.IsNotFound(err):
		mutate()
		return c.Create(ctx, obj)
	case err != nil:
		return err
	}
	mutate()
	return c.Update(ctx, obj)
}

// stopDevClusters stops the managed clusters, last started first.
func stopDevClusters(clusters []*localcluster.Cluster) error {
	var err error
	for i := len(clusters) - 1; i >= 0; i-- {
		err = errors.Join(err, clusters[i].Stop())
	}
	return err
}

// prefixWriter prefixes each write (one progress line) with the cluster's
// name.
type prefixWriter struct {
	prefix string
	w      io.Writer
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix+string(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}
