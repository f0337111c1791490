// Package bench measures Annex against one local kube-apiserver and etcd.
//
// BenchmarkSystem is the full-system benchmark. For N = 100, 500 and 1,000
// apps (a ServiceAccount, a Service, a Deployment scaled to zero and an
// Ingress each) it runs, each against its own fresh API server:
//
//   - raw: a plain client creating, then deleting, the objects with 10
//     workers and client rate limits off: the floor;
//   - proto: a plain client sending, for each app, the requests Annex's
//     install and uninstall send, 32 apps at a time, with no manager: the
//     API server's floor under Annex;
//   - annex: `annex manager`, built from ./cmd/annex and run as a
//     subprocess, installing N ExtensionInstallations of a chart served by
//     an in-process Helm repository: time from creation to all Ready, time
//     to uninstall all, the manager's peak resident memory, the API
//     requests it makes (counted by a reverse proxy it talks to), and the
//     writes it makes while nothing changes for a minute with
//     spec.interval 10s;
//   - annex-oci and annex-signed: annex with the chart in an in-process
//     OCI registry, unsigned and without a policy, then signed with a key
//     made for the run and the Catalog under an Enforce cosign policy
//     trusting it (every installation's status.artifact must show the
//     verified signature): the difference is what verification costs,
//     once per digest;
//   - helm: the Helm CLI built from the pinned helm.sh/helm/v4, `helm
//     install` ×N and `helm uninstall` ×N, 10 in parallel, without --wait
//     (no controller makes a Deployment report status here).
//
// BenchmarkSystem/CRD1K creates 1,000 CRDs next to an idle manager and
// reports how its memory moved. After the benchmarks a table compares the
// systems. Run one size with
//
//	go test ./test/bench -run '^$' -bench 'System/N100' -benchtime 1x
//
// BenchmarkGateOverhead measures what the gate (hooks, approval) adds to
// installing: for N = 100 and 500 installations through `annex manager`,
// each case against its own fresh API server, no gate, one Hook answered
// at once by an informer-driven hook controller in the benchmark, three
// such Hooks of one order, an Automatic ApprovalPolicy, and a Manual one
// with every Approval created in advance; time to Ready, latency,
// reconciles, requests and CPU per installation. Compare the cases with
//
//	go tool benchstat -col /gate bench.raw
//
// BenchmarkMemberCRDs measures what the fleet simulation's large chart's
// CRDs cost one member API server: its resident memory and CPU time per
// CRD, in steps (ANNEX_BENCH_MEMBER_CRDS, default 384):
//
//	go test ./test/bench -run '^$' -bench '^BenchmarkMemberCRDs$' -benchtime 1x
//
// BenchmarkN100, BenchmarkN500 and BenchmarkN1K measure the applier
// (internal/apply) in-process next to the plain client. Everything needs
// the binaries `make envtest-assets` builds.
package bench
