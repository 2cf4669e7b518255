// Package procmain is the part of main that every splitlet process shares:
// the garbage collector's default target, the exit statuses, the logger
// (with klog routed into it), the stop signals, and tracing set up and
// flushed. Each main keeps what is its own: its command line and its run.
//
//	func main() {
//		os.Exit(procmain.Main(procmain.Process{Name: tracing.ServiceSync}, parse))
//	}
package procmain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing"
)

// Process names one splitlet process for Main.
type Process struct {
	// Name is the command's name, in messages and as its traces'
	// service.name (tracing.ServiceSync, ...).
	Name string
	// GCPercent is the garbage collector's target (GOGC) when the
	// environment sets none; 0 keeps Go's default.
	GCPercent int
}

// ApplyRuntimeDefaults sets p's GOGC default unless the environment sets
// GOGC: whoever sets it chose, and gets exactly that. Main calls it; a
// benchmark that runs a process's server in a child of its own calls it to
// run it as deployed.
func ApplyRuntimeDefaults(p Process) {
	if p.GCPercent != 0 && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(p.GCPercent)
	}
}

// Setup is what a process's parsed command line gives Main.
type Setup struct {
	// Done says the command line asked for something already done (it
	// printed the version): Main exits with 0 at once.
	Done bool
	// Logger builds the process's logger.
	Logger func() (*zap.Logger, error)
	// Tracing configures the process's traces.
	Tracing tracing.Config
	// Started are logged with "starting <name>".
	Started []zap.Field
	// Run runs the process until ctx ends (SIGTERM, SIGINT); ctx carries
	// the logger (logctx).
	Run func(ctx context.Context) error
}

// tracingShutdownTimeout bounds the export of the spans still buffered at
// exit: a collector that is gone must not hold up the exit.
const tracingShutdownTimeout = 5 * time.Second

// Main parses the command line with parse, runs the process and returns its
// exit status: 0 after a clean stop or --help, 2 for a bad command line or
// logger configuration (printed to stderr), 1 when tracing or the run
// fails (logged).
func Main(p Process, parse func() (Setup, error)) int {
	ApplyRuntimeDefaults(p)
	setup, err := parse()
	if errors.Is(err, flag.ErrHelp) || (err == nil && setup.Done) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", p.Name, err)
		return 2
	}
	log, err := setup.Logger()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: logger: %v\n", p.Name, err)
		return 2
	}
	logctx.RouteKlog(log)
	defer func() { _ = log.Sync() }()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("starting "+p.Name, append(setup.Started, zap.Int("gomaxprocs", runtime.GOMAXPROCS(0)))...)
	tr, err := tracing.Setup(ctx, p.Name, setup.Tracing)
	if err != nil {
		log.Error("tracing", zap.Error(err))
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownTimeout)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			log.Warn("tracing shutdown", zap.Error(err))
		}
	}()
	if err := setup.Run(logctx.With(ctx, log)); err != nil {
		log.Error(p.Name+" failed", zap.Error(err))
		return 1
	}
	log.Info("stopped")
	return 0
}
