// Command splitlet-cluster is `make cluster` / `make cluster-down`: a
// Kubernetes control plane on this machine (package cluster). hack/cluster.sh
// builds the components and runs it inside a network namespace.
//
//	splitlet-cluster [flags] up                   start and leave it running
//	splitlet-cluster [flags] down                 stop what up started
//	splitlet-cluster [flags] node-kubeconfig NODE write NODE's kubeconfig, print its path
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/cluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "splitlet-cluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("splitlet-cluster", flag.ContinueOnError)
	dir := fs.String("dir", "_out/cluster", "certificates, kubeconfigs, etcd data, pid files and logs")
	bin := fs.String("bin", "", "directory of kube-apiserver, kube-controller-manager and kube-scheduler (hack/lib/kube.sh's $KUBE_BIN_DIR)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: splitlet-cluster [flags] up | down | node-kubeconfig NODE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "up":
		if *bin == "" {
			return errors.New("--bin is required")
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		log, err := zap.NewDevelopment()
		if err != nil {
			return err
		}
		defer func() { _ = log.Sync() }()
		// A previous cluster's state is removed only once it is stopped.
		if stopped, err := cluster.StopDetached(*dir, cluster.DefaultStopGrace); err != nil {
			return err
		} else if len(stopped) > 0 {
			log.Info("stopped the cluster left running", zap.Strings("processes", stopped))
		}
		if err := os.RemoveAll(*dir); err != nil {
			return err
		}
		c, err := cluster.Start(ctx, cluster.Config{BinDir: *bin, Dir: *dir, Logger: log})
		if err != nil {
			return err
		}
		// Detached: the processes outlive this command; down stops them.
		fmt.Printf("control plane ready at %s\n  kubeconfig %s\n  logs       %s\n",
			c.Server, c.AdminKubeconfig, filepath.Join(*dir, "log"))
		return nil
	case "down":
		stopped, err := cluster.StopDetached(*dir, cluster.DefaultStopGrace)
		if err != nil {
			return err
		}
		fmt.Printf("stopped %v\n", stopped)
		return nil
	case "node-kubeconfig":
		if fs.NArg() != 2 {
			return errors.New("node-kubeconfig needs a node name")
		}
		c, err := cluster.Open(*dir)
		if err != nil {
			return err
		}
		path, err := c.NodeKubeconfig(fs.Arg(1))
		if err != nil {
			return err
		}
		fmt.Println(path)
		return nil
	default:
		fs.Usage()
		return fmt.Errorf("unknown command %q", fs.Arg(0))
	}
}
