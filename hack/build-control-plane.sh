#!/usr/bin/env bash
# Builds kube-apiserver and etcd from their Go modules (pinned in hack/tools)
# into bin/k8s/<version>/. Reused when present; the first build takes about
# 5-8 minutes on 2 cores, later runs return at once.
#
#   hack/build-control-plane.sh [kube-version]   (default: the pinned one)
#
# The version stamped into kube-apiserver may differ from the source it is
# built from (ldflags only, about 30 s to relink): tests use that to upgrade a
# cluster's reported Kubernetes version on the same etcd data.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src_version=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$root/hack/tools/go.mod")
version=${1:-${src_version#v}}
version=${version#v}
out="$root/bin/k8s/$version"
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" ]]; then
  exit 0
fi
mkdir -p "$out"
major=${version%%.*}
minor=${version#*.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$version -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
cd "$root/hack/tools"
if [[ ! -x "$out/etcd" ]]; then
  echo "annex: building etcd into $out (about 1 minute the first time)..." >&2
  go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" ./etcd
  mv "$out/etcd.tmp" "$out/etcd"
fi
echo "annex: building kube-apiserver v$version from k8s.io/kubernetes $src_version into $out (about 5-8 minutes the first time, once)..." >&2
start=$SECONDS
go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
echo "annex: control plane v$version ready in $out ($((SECONDS - start)) s)" >&2
