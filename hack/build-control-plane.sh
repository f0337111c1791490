#!/usr/bin/env bash
# Builds kube-apiserver and etcd from their Go modules (pinned in hack/tools)
# into bin/k8s/<version>/, with kube-controller-manager, kube-scheduler and
# kwok (hack/tools/kwok) and its stage definitions, so that the local
# cluster runs workloads. Reused when
# present; the first build takes about 12-18 minutes on 2 cores, later runs
# return at once.
#
#   hack/build-control-plane.sh [kube-version]   (default: the pinned one)
#
# A version whose minor has its own module in hack/tools/kube-<major.minor>
# (e.g. 1.36.4) is built from there: tests upgrade a cluster for real by
# restarting an older kube-apiserver as the pinned newer one on the same etcd
# data. etcd always comes from hack/tools.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pinned=$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$root/hack/tools/go.mod")
version=${1:-${pinned#v}}
version=${version#v}
module="$root/hack/tools"
minor_module="$root/hack/tools/kube-$(cut -d. -f1,2 <<<"$version")"
if [[ -f "$minor_module/go.mod" ]]; then
  module=$minor_module
fi
src_version=$(grep -Eo 'k8s.io/kubernetes v[0-9.]+' "$module/go.mod" | head -1 | cut -d' ' -f2)
out="$root/bin/k8s/$version"
# A version whose module builds kube-controller-manager and kube-scheduler
# runs workloads (annex dev and its --clusters): those two, and kwok with
# its stages for fake nodes.
workloads=false
if grep -q 'cmd/kube-controller-manager' "$module/tools.go"; then
  workloads=true
fi
have_all() {
  [[ -x "$out/kube-apiserver" && -x "$out/etcd" ]] || return 1
  if $workloads; then
    [[ -x "$out/kube-controller-manager" && -x "$out/kube-scheduler" && -x "$out/kwok" && -s "$out/kwok-stages.yaml" ]] || return 1
  fi
}
if have_all; then
  exit 0
fi
mkdir -p "$out"
major=${version%%.*}
minor=${version#*.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$version -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
if [[ ! -x "$out/etcd" ]]; then
  echo "annex: building etcd into $out (about 1 minute the first time)..." >&2
  (cd "$root/hack/tools" && go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" ./etcd)
  mv "$out/etcd.tmp" "$out/etcd"
fi
cd "$module"
start=$SECONDS
if [[ ! -x "$out/kube-apiserver" ]]; then
  echo "annex: building kube-apiserver v$version from k8s.io/kubernetes $src_version into $out (about 5-8 minutes the first time, once)..." >&2
  go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
fi
if $workloads; then
  for cmd in kube-controller-manager kube-scheduler; do
    if [[ ! -x "$out/$cmd" ]]; then
      echo "annex: building $cmd v$version into $out (about 2-4 minutes the first time, once)..." >&2
      go build -trimpath -ldflags "$ldflags" -o "$out/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd"
      mv "$out/$cmd.tmp" "$out/$cmd"
    fi
  done
  if [[ ! -x "$out/kwok" || ! -s "$out/kwok-stages.yaml" ]]; then
    echo "annex: building kwok (fake nodes whose pods run) into $out (about 3-4 minutes the first time, once)..." >&2
    (cd "$root/hack/tools/kwok" && go build -trimpath -ldflags "-s -w" -o "$out/kwok.tmp" sigs.k8s.io/kwok/cmd/kwok &&
      go run ./stages >"$out/kwok-stages.yaml.tmp")
    mv "$out/kwok.tmp" "$out/kwok"
    mv "$out/kwok-stages.yaml.tmp" "$out/kwok-stages.yaml"
  fi
fi
echo "annex: control plane v$version ready in $out ($((SECONDS - start)) s)" >&2
