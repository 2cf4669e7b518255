// Command splitctl is kubectl's pod verbs for a splitlet node.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/splitlet/splitlet/splitctl/internal/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Main(ctx, os.Args[1:], &cmd.Env{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		Getenv: os.Getenv, IsTerminal: cmd.IsTerminal(os.Stderr),
	})
	stop()
	os.Exit(code)
}
