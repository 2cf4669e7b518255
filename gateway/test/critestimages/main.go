// Command critestimages builds the container images that critest (cri-tools
// v1.30.0) pulls and pushes them to a plain-HTTP registry, so `make critest` can
// run on a machine that reaches no public registry.
//
// Every image is the static busybox plus, where critest needs it, a marker file,
// an image user, extra /etc/passwd and /etc/group entries, or the small `standin`
// binary (./standin) that plays nginx, httpd, nonewprivs and pause. Images are
// pushed under their upstream path without the registry host
// (registry.k8s.io/e2e-test-images/busybox:1.29-2 becomes
// HOST:PORT/e2e-test-images/busybox:1.29-2), so containerd registry mirrors for
// registry.k8s.io and gcr.io pointing at HOST:PORT serve them.
//
// Usage:
//
//	critestimages -busybox /bin/busybox -standin PATH -registry 127.0.0.1:5000
//	critestimages -list    # what is built and what cannot be, with reasons
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.busybox, "busybox", "/bin/busybox", "path of a statically linked busybox")
	flag.StringVar(&cfg.standin, "standin", "", "path of the static standin binary (plays nginx, httpd, nonewprivs, pause)")
	flag.StringVar(&cfg.registry, "registry", "127.0.0.1:5000", "plain-HTTP registry HOST:PORT to push to")
	flag.BoolVar(&cfg.list, "list", false, "print the built and the unbuildable image references, then exit")
	flag.Parse()

	logger, err := zap.NewDevelopment()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer func() { _ = logger.Sync() }()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(withLogger(ctx, logger), cfg, os.Stdout); err != nil {
		logger.Error("critestimages failed", zap.Error(err))
		os.Exit(1)
	}
}
