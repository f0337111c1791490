//go:build tools

// Package tools records the commands this module builds: an older control
// plane, for tests that upgrade a cluster for real and for `annex dev
// --clusters`, whose second cluster runs this version.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
