// Package cmd holds splitctl's commands: kubectl's verbs and flags, applied to
// splitlet-sync's PodService. Main runs them and turns errors into kubectl's
// messages and exit codes.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
	"github.com/splitlet/splitlet/splitctl/internal/client"
)

// Env is everything a command touches outside itself, so tests can run the
// real command tree against a fake server, fake streams and a fixed clock.
type Env struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// Getenv reads the environment (os.Getenv in main).
	Getenv func(string) string
	// Now is the clock for AGE columns and waits.
	Now func() time.Time
	// IsTerminal reports whether ErrOut is a terminal (spinner vs. lines).
	IsTerminal bool
}

// ExitError ends splitctl with Code and no message of its own, as kubectl
// exec ends with the remote command's exit code.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("exit code %d", e.Code) }

// globals are the flags every command has.
type globals struct {
	env        *Env
	server     string
	creds      client.Credentials
	namespace  string
	configPath string
	verbosity  int
	// retryTimeout bounds the retries of a call while the server is away.
	retryTimeout time.Duration
}

// client resolves the server address and returns a PodService client.
func (g *globals) client(ctx context.Context) (podv1connect.PodServiceClient, error) {
	cfgPath := g.configPath
	if cfgPath == "" {
		cfgPath = client.DefaultConfigPath(g.env.Getenv)
	}
	addr, src, err := client.ResolveServer(g.server, g.env.Getenv, cfgPath)
	if err != nil {
		return nil, err
	}
	logctx.From(ctx).Debug("server", zap.String("address", addr), zap.String("from", string(src)))
	dial, err := client.Dial(addr, g.creds, g.env.Getenv, cfgPath)
	if err != nil {
		return nil, err
	}
	hc, base, err := dial.Client(false)
	if err != nil {
		return nil, err
	}
	return client.New(addr, base, hc, g.retryTimeout), nil
}

// NewRootCommand builds the command tree.
func NewRootCommand(env *Env) *cobra.Command {
	g := &globals{env: env}
	root := &cobra.Command{
		Use:   "splitctl",
		Short: "splitctl controls the pods of a splitlet node, the way kubectl does",
		Long: `splitctl talks to splitlet-sync's PodService. The server address comes from
--server, then $SPLITLET_SERVER, then "server:" in ~/.config/splitlet/config.yaml,
then ` + client.DefaultServer + `.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			if g.verbosity > 0 {
				cfg := zap.NewDevelopmentConfig()
				cfg.Level = zap.NewAtomicLevelAt(zapcore.DebugLevel)
				core := zapcore.NewCore(zapcore.NewConsoleEncoder(cfg.EncoderConfig), zapcore.AddSync(env.ErrOut), cfg.Level)
				cmd.SetContext(logctx.With(cmd.Context(), zap.New(core)))
			}
		},
	}
	root.SetIn(env.In)
	root.SetOut(env.Out)
	root.SetErr(env.ErrOut)
	pf := root.PersistentFlags()
	pf.StringVar(&g.server, "server", "", "The address of splitlet-sync's PodService: unix:///path, http(s)://host:port (env "+client.ServerEnv+")")
	pf.StringVar(&g.creds.Token, "token", "", "Bearer token for the server (env "+client.TokenEnv+"; config token or tokenFile)")
	pf.StringVar(&g.creds.CertificateAuthority, "certificate-authority", "", "Path to a CA bundle verifying an https server")
	pf.StringVar(&g.creds.ClientCertificate, "client-certificate", "", "Path to a client certificate for mutual TLS")
	pf.StringVar(&g.creds.ClientKey, "client-key", "", "Path to the client certificate's key")
	pf.StringVarP(&g.namespace, "namespace", "n", "default", "The namespace scope for this request")
	pf.StringVar(&g.configPath, "config", "", "Path to the splitctl config file (env "+client.ConfigEnv+"; default ~/.config/splitlet/config.yaml)")
	pf.IntVarP(&g.verbosity, "v", "v", 0, "Log level for debug output on stderr")
	pf.DurationVar(&g.retryTimeout, "retry-timeout", client.DefaultRetryTimeout, "How long a call is retried while splitlet-sync is away (restarting); 0 never retries")

	root.AddCommand(
		newApplyCommand(g),
		newGetCommand(g),
		newDescribeCommand(g),
		newLogsCommand(g),
		newDeleteCommand(g),
		newExecCommand(g),
		newEventsCommand(g),
	)
	return root
}

// Main runs splitctl with args and returns the process exit code: 0 on
// success, 1 on any error (kubectl's DefaultErrorExitCode), or the remote
// command's code for exec.
func Main(ctx context.Context, args []string, env *Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	root := NewRootCommand(env)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var exit *ExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	fmt.Fprintln(env.ErrOut, ErrorMessage(err))
	return 1
}

// ErrorMessage formats err as kubectl's StandardErrorMessage and CheckErr do:
// server and connection errors stand as they are, anything else gets
// "error: ".
func ErrorMessage(err error) string {
	var se *client.StatusError
	var ce *client.ConnectionError
	if errors.As(err, &se) || errors.As(err, &ce) {
		return err.Error()
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "error: ") {
		msg = "error: " + msg
	}
	return msg
}

// usageError is a mistake in the command line, reported with a hint the way
// kubectl's UsageErrorf does.
func usageError(cmd *cobra.Command, format string, args ...any) error {
	return fmt.Errorf("%s\nSee '%s -h' for help and examples", fmt.Sprintf(format, args...), cmd.CommandPath())
}

// IsTerminal reports whether f is a character device (a terminal), which
// decides between a spinner and plain progress lines.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
