#!/usr/bin/env bash
# The pure cores (.golangci.yml's depguard list pure-cores) take values and
# return values. depguard sees a package's own imports only; this check
# follows every import down: no pure core may link controller-runtime, a
# client-go client, or one of Annex's I/O packages through another
# package. The Helm engine renders with the Helm SDK, which links
# client-go itself; it is held to the rest of the rule.
set -euo pipefail
cd "$(dirname "$0")/.."
module=github.com/annex-platform/annex
cores=(resolve depend plan gate engine engine/bundle engine/pkg engine/helm target preflight rollout fleet
  names kubeapis archive adopt values crdcheck convert/... verify news uninstall remediate readiness)
io="^$module/internal/(apply|cluster|controller|manager|metrics|catalog|console|cli|hookrequest|approval|testenv)(/|$)"
clients='^(sigs\.k8s\.io/controller-runtime/|k8s\.io/client-go/(rest|dynamic|discovery|tools)(/|$))'
failed=0
for core in "${cores[@]}"; do
  deps=$(go list -deps "./internal/$core")
  deny="$io"
  [[ $core == engine/helm ]] || deny="$io|$clients"
  if bad=$(grep -E "$deny" <<<"$deps"); then
    echo "internal/$core is a pure core but links, through its imports:" >&2
    sed 's/^/  /' <<<"$bad" >&2
    failed=1
  fi
done
if (( failed )); then
  echo "find the import that brings it in with: go list -deps -f '{{.ImportPath}}: {{join .Imports \" \"}}' ./internal/<core> | grep <package>" >&2
  exit 1
fi
echo "pure cores: no client or I/O package linked (${#cores[@]} packages)"
