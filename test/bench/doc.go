// Package bench measures the applier against one local kube-apiserver and
// etcd: how long N installations take to apply, become ready and be
// deleted, and how many API requests each costs, next to a plain client
// creating the same objects. Run it with
//
//	go test ./test/bench -run '^$' -bench N100 -benchtime 1x
//
// (BenchmarkN500 and BenchmarkN1K are the larger sizes). It needs the
// binaries `make envtest-assets` builds.
package bench
