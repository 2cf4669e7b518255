package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
)

// startGateway starts splitlet-gateway with the fake backend on a socket in
// dir, waits until it answers, sets the CRI latency, and returns it with a
// connection to it. allowedHostPath is where pods may mount host paths
// from (the pod directories of sync or the kubelet).
func startGateway(ctx context.Context, cfg Config, dir, allowedHostPath string) (*process, *grpc.ClientConn, string, error) {
	socket := filepath.Join(dir, "gateway.sock")
	bin := filepath.Join(cfg.BinDir, "splitlet-gateway")
	args := []string{
		"--backend=fake",
		"--socket=" + socket,
		"--fake-preload-images=" + preloadImages,
		"--allowed-host-path=" + allowedHostPath,
		"--log-level=warn",
	}
	debugURL, extra, err := profilingArgs(cfg, bin, "metrics-addr")
	if err != nil {
		return nil, nil, "", err
	}
	gw, err := startProcess(ctx, dir, "gateway", bin, append(args, extra...)...)
	if err != nil {
		return nil, nil, "", err
	}
	gw.debugURL = debugURL
	conn, err := dialGateway(socket)
	if err != nil {
		gw.stop(5 * time.Second)
		return nil, nil, "", err
	}
	if err := gw.waitReady(ctx, 20*time.Second, criReady(conn)); err != nil {
		conn.Close()
		gw.stop(5 * time.Second)
		return nil, nil, "", err
	}
	if cfg.Latency > 0 {
		if err := setLatency(ctx, conn, cfg.Latency); err != nil {
			conn.Close()
			gw.stop(5 * time.Second)
			return nil, nil, "", fmt.Errorf("set fake latency: %w", err)
		}
	}
	return gw, conn, socket, nil
}
