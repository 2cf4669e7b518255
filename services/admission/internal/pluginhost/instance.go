package pluginhost

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	sdk "github.com/splitlet/splitlet/services/admission/plugin"
)

// instance is one running plugin: its client and how to tell whether its
// process is gone. Tests build instances on the SDK's in-process harness.
type instance struct {
	plugin *sdk.GRPCClient
	info   sdk.Info
	pid    int
	// exited reports that the plugin's process is gone.
	exited func() bool
	// kill stops the process (if any) and releases its resources; it is
	// safe to call more than once.
	kill func()
}

// launchFunc starts a plugin. It returns a *ChecksumMismatchError when the
// binary changed.
type launchFunc func(ctx context.Context) (*instance, error)

// describeTimeout bounds the Describe call made after a start, which only
// feeds logs.
const describeTimeout = time.Second

// replyWindow is the HTTP/2 flow-control window of the host's connection to
// a plugin, per stream and for the connection. Setting it turns off
// grpc-go's bandwidth estimator, which otherwise sends a PING after nearly
// every reply (each one a write and a read on both sides of the hop, and a
// wake-up of the other process); replies are a few hundred bytes, so a fixed
// window never stalls them. The plugin's server does the same for requests
// (requestWindow in the plugin package).
const replyWindow = 4 << 20

// processLauncher starts p's binary as a go-plugin child process.
func processLauncher(p *PluginConfig, log *zap.Logger, startTimeout time.Duration, dialOpts []grpc.DialOption) launchFunc {
	dialOpts = append([]grpc.DialOption{
		grpc.WithInitialWindowSize(replyWindow),
		grpc.WithInitialConnWindowSize(replyWindow),
	}, dialOpts...)
	return func(ctx context.Context) (_ *instance, retErr error) {
		// Checked here and not only by go-plugin's SecureConfig, whose
		// error ("checksums did not match") names neither the plugin nor
		// the sums.
		sum, err := verifyChecksum(p)
		if err != nil {
			return nil, err
		}

		cmd := exec.Command(p.Path)
		// The plugin inherits the host's environment with its configured
		// variables last, so that they win; go-plugin's own copy of the
		// host environment would come after them and override them, hence
		// SkipHostEnv.
		cmd.Env = append(os.Environ(), envList(p.Env)...)
		dieWithHost(cmd)
		client := goplugin.NewClient(&goplugin.ClientConfig{
			HandshakeConfig: sdk.Handshake,
			Plugins:         sdk.PluginMap,
			Cmd:             cmd,
			SkipHostEnv:     true,
			// Second check, right before exec, narrowing the window in
			// which the file could change after verifyChecksum.
			SecureConfig:     &goplugin.SecureConfig{Checksum: sum, Hash: sha256.New()},
			AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
			AutoMTLS:         true,
			StartTimeout:     startTimeout,
			Logger:           newHCLogger(log),
			GRPCDialOptions:  dialOpts,
		})
		defer func() {
			if retErr != nil {
				client.Kill()
			}
		}()

		rpc, err := client.Client()
		if err != nil {
			if errors.Is(err, goplugin.ErrChecksumsDoNotMatch) {
				return nil, &ChecksumMismatchError{Plugin: p.Name, Path: p.Path, Expected: p.SHA256, Actual: "changed after verification"}
			}
			return nil, fmt.Errorf("start %s: %w", p.Path, err)
		}
		raw, err := rpc.Dispense(sdk.PluginName)
		if err != nil {
			return nil, fmt.Errorf("dispense %s: %w", sdk.PluginName, err)
		}
		pc, ok := raw.(*sdk.GRPCClient)
		if !ok {
			return nil, fmt.Errorf("dispensed %T, want *plugin.GRPCClient", raw)
		}

		inst := &instance{plugin: pc, exited: client.Exited, kill: client.Kill}
		if rc := client.ReattachConfig(); rc != nil {
			inst.pid = rc.Pid
		}
		dctx, cancel := context.WithTimeout(ctx, describeTimeout)
		defer cancel()
		if inst.info, err = pc.Describe(dctx); err != nil {
			// Describe only names the plugin in logs; a plugin that
			// cannot answer it may still admit.
			log.Warn("admission plugin did not describe itself", zap.Error(err))
		}
		return inst, nil
	}
}

// envList renders env as KEY=VALUE in key order, so that the command line
// (and its logs) do not change from one start to the next.
func envList(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}
