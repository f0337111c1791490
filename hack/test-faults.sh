#!/usr/bin/env bash
# Runs the crash tests of test/faults many times under CPU contention:
# FAULT_COPIES copies of the compiled test at once (each with its own
# kube-apiserver, etcd and manager, so they compete for the CPU), until
# FAULT_SEEDS runs are done. Each run kills the manager at random moments
# and at random failpoints with a random seed (TestManagerCrashesConverge,
# ANNEX_FAULT_OPS operations), then at every chosen kill point
# (TestKillPoints), and mid-plan for a package (TestPlanResumesAtItsStep);
# and a profile's rollout through random changes, pauses and kills
# (TestRolloutCrashesConverge, ANNEX_FAULT_ROLLOUT_OPS operations), then at
# every rollout kill point (TestRolloutKillPoints).
# Logs go to bin/faults/; a failed run's seed is printed
# so that it can be replayed with ANNEX_FAULT_SEED=<seed>.
#
#   FAULT_SEEDS=30 FAULT_COPIES=3 hack/test-faults.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seeds=${FAULT_SEEDS:-30}
copies=${FAULT_COPIES:-3}
out="$root/bin/faults"
mkdir -p "$out"
rm -f "$out"/run-*.log
echo "annex: building the fault tests and the manager they run..." >&2
go test -c -o "$out/faults.test" "$root/test/faults"
(cd "$root" && go build -o "$out/annex" ./cmd/annex)
export ANNEX_BINARY="$out/annex"

run() {
  local i=$1 seed
  seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
  if (cd "$root/test/faults" && ANNEX_FAULTS=random ANNEX_FAULT_SEED=$seed \
      "$out/faults.test" -test.count=1 -test.v -test.timeout 60m \
      -test.run '^(TestManagerCrashesConverge|TestKillPoints|TestPlanResumesAtItsStep|TestRolloutCrashesConverge|TestRolloutKillPoints)$') >"$out/run-$i.log" 2>&1; then
    echo "run $i: seed $seed: ok"
  else
    echo "run $i: seed $seed: FAILED (log: bin/faults/run-$i.log)"
  fi
}

start=$SECONDS
for ((wave = 0; wave * copies < seeds; wave++)); do
  for ((c = 0; c < copies && wave * copies + c < seeds; c++)); do
    run $((wave * copies + c + 1)) &
  done
  wait
  echo "after $((SECONDS - start)) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done | tee "$out/summary.txt"
passed=$(grep -c ': ok$' "$out/summary.txt" || true)
failed=$(grep -c 'FAILED' "$out/summary.txt" || true)
kills=$(grep -ho 'SIGKILLed [0-9]* times at random and killed itself [0-9]* times' "$out"/run-*.log |
  awk '{r += $2; f += $9} END {printf "%d random kills and %d failpoint kills", r, f}')
echo "annex: $passed of $seeds fault runs passed, $failed failed, $copies at a time, $((SECONDS - start)) s; $kills in the random tests" | tee -a "$out/summary.txt"
[[ $failed -eq 0 ]]
