// Package stack starts and stops splitlet's three processes — the gateway,
// admission and sync — as real binaries, wired to one another: it picks the
// ports and socket paths, writes admission's configuration, waits until each
// process is healthy, keeps each one's output in a log file, and stops them
// in dependency order (sync, then admission, then the gateway). It is the one
// launcher of the stack: the process tests of every service, the benchmark
// harness and `make run` (cmd/splitlet-stack) use it, so there is one way to
// find a free port, one health rule per process and one stop order.
//
// Usage:
//
//	bin, err := stack.Build(ctx, tmp)             // or a bin/ from make build
//	s, err := stack.Start(ctx, stack.Config{
//		BinDir: bin,
//		Dir:    dir,                             // state, logs, socket
//		NodeName: "node1",
//		SyncArgs: []string{"--relist-interval=200ms"},
//	})
//	defer s.Stop()
//	client := podv1connect.NewPodServiceClient(http.DefaultClient, s.SyncURL())
//
// Chaos and restart tests use the processes directly: s.Sync.Kill() then
// s.Sync.Restart(ctx) brings sync back on the same state, flags and log.
package stack
