// Command stages prints kwok's stage definitions for fast fake nodes and
// pods — nodes become Ready and keep a heartbeat, pods become Ready,
// Jobs' pods complete, deleted pods go — as the one YAML stream that
// `kwok --config` reads (each document after a "---" line).
package main

import (
	"fmt"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	for _, doc := range []string{
		nodefast.DefaultNodeInit, nodeheartbeat.DefaultNodeHeartbeat,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete,
	} {
		fmt.Println("---")
		fmt.Println(strings.TrimSpace(doc))
	}
}
