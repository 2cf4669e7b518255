package criclient

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// ConnectParams is the kubelet's CRI client's reconnect back-off
// (k8s.io/cri-client remote_runtime.go: baseBackoffDelay 100 ms,
// maxBackoffDelay 3 s, minConnectionTimeout 5 s), for every connection of
// splitlet's to a CRI endpoint: the gateway's to the runtime, sync's and
// admission's to the gateway. gRPC's default (1 s first, growing to 2
// minutes) leaves a client that long behind a runtime or gateway that came
// back after a long restart; with these it is back within 3 s.
var ConnectParams = grpc.ConnectParams{
	Backoff: backoff.Config{
		BaseDelay:  100 * time.Millisecond,
		Multiplier: backoff.DefaultConfig.Multiplier,
		Jitter:     backoff.DefaultConfig.Jitter,
		MaxDelay:   3 * time.Second,
	},
	MinConnectTimeout: 5 * time.Second,
}
