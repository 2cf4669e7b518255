package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
	sdk "github.com/splitlet/splitlet/services/admission/plugin"
)

// Rejection reasons of the plugin chain. A plugin's own rejection keeps the
// plugin's reason.
const (
	// ReasonPluginError: a fail-closed plugin could not decide (error,
	// timeout, crash, refused or failed start).
	ReasonPluginError = "AdmissionPluginError"
	// ReasonPluginRejected: a plugin rejected the pod without a reason.
	ReasonPluginRejected = "AdmissionPluginRejected"
)

// DefaultStartTimeout bounds a plugin's start and handshake.
const DefaultStartTimeout = 10 * time.Second

// Options configure New.
type Options struct {
	// Logger receives the host's and the plugins' process logs (plugin
	// stderr). Per-admission logs go to the logger in the call's context.
	// Nil discards them.
	Logger *zap.Logger
	// GetNode supplies the node sent to plugins; nil, or an error, sends
	// none.
	GetNode func(ctx context.Context) (*v1.Node, error)
	// Encodings, when set, knows the encoding of pods decoded from the
	// AdmitRequest (a *podcache.Cache), which are then sent as they came
	// instead of being encoded again.
	Encodings sdk.EncodingSource
	// StartTimeout bounds a plugin's start; default DefaultStartTimeout.
	StartTimeout time.Duration
	// RestartBackoff and MaxRestartBackoff shape the delay between restarts
	// of a crashing plugin; defaults DefaultRestartBackoff and
	// DefaultMaxRestartBackoff.
	RestartBackoff, MaxRestartBackoff time.Duration
	// GRPCDialOptions are added to each plugin's gRPC connection (tracing's
	// stats handler, which carries the trace context to the plugin).
	GRPCDialOptions []grpc.DialOption
}

// Chain asks the configured plugins, in order, whether a pod may run; the
// first rejection wins. It is the plugin part of the admission chain.
//
// Admit encodes a request once for all plugins; each plugin that keeps
// active sets (every plugin built on the SDK) is sent only the active pods
// that changed since its previous call, the others the whole set. It
// reuses the encoding of an active pod object it has sent before
// (plugin.Encoder), so a pod changed in place after it was handed to
// admission must also get a new ResourceVersion; the kubelet's pod manager
// replaces changed pods with new objects, which needs nothing.
// Pods Options.Encodings knows (those decoded from the AdmitRequest) are
// sent as the bytes they came in, without encoding at all.
type Chain struct {
	plugins []*hostPlugin
	getNode func(ctx context.Context) (*v1.Node, error)
	// enc encodes each request once for all plugins and reuses the
	// encoding of active pods across admissions.
	enc sdk.Encoder
}

var _ lifecycle.PodAdmitHandler = (*Chain)(nil)

// New starts the plugins of cfg. It fails when a plugin's binary is missing
// or its checksum differs (a *ChecksumMismatchError): those need an operator.
// A plugin that fails to start for another reason does not fail New; it is
// retried on the next admission and its failure policy applies meanwhile.
// Close the Chain to stop the plugins.
func New(ctx context.Context, cfg *Config, opts Options) (_ *Chain, retErr error) {
	opts = opts.withDefaults()
	c := &Chain{getNode: opts.GetNode}
	c.enc.Source = opts.Encodings
	defer func() {
		if retErr != nil {
			c.Close()
		}
	}()
	// Every checksum is verified before anything starts, so that a
	// configuration with one changed binary starts no process at all.
	for i := range cfg.Plugins {
		if _, err := verifyChecksum(&cfg.Plugins[i]); err != nil {
			return nil, err
		}
	}
	for _, pc := range cfg.Plugins {
		log := opts.Logger.With(zap.String("admissionPlugin", pc.Name))
		p := newHostPlugin(pc, log, processLauncher(&pc, log, opts.StartTimeout, opts.GRPCDialOptions), opts)
		c.plugins = append(c.plugins, p)
		p.mu.Lock()
		_, err := p.startLocked(ctx)
		p.mu.Unlock()
		var mismatch *ChecksumMismatchError
		if errors.As(err, &mismatch) {
			return nil, err
		}
	}
	return c, nil
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.RestartBackoff <= 0 {
		o.RestartBackoff = DefaultRestartBackoff
	}
	if o.MaxRestartBackoff <= 0 {
		o.MaxRestartBackoff = DefaultMaxRestartBackoff
	}
	return o
}

func newHostPlugin(cfg PluginConfig, log *zap.Logger, launch launchFunc, opts Options) *hostPlugin {
	return &hostPlugin{
		cfg:     cfg,
		log:     log,
		launch:  launch,
		now:     time.Now,
		backoff: restartBackoff{initial: opts.RestartBackoff, max: opts.MaxRestartBackoff},
	}
}

// Admit implements lifecycle.PodAdmitHandler.
func (c *Chain) Admit(ctx context.Context, attrs *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	if len(c.plugins) == 0 {
		return lifecycle.PodAdmitResult{Admit: true}
	}
	log := logctx.From(ctx)
	req := &sdk.Request{Pod: attrs.Pod, ActivePods: attrs.OtherPods}
	if c.getNode != nil {
		node, err := c.getNode(ctx)
		if err != nil {
			log.Warn("admission plugins get no node object", zap.Error(err))
		}
		req.Node = node
	}
	prepared, err := c.enc.Prepare(req)
	if err != nil {
		return lifecycle.PodAdmitResult{
			Reason:  lifecycle.UnexpectedAdmissionError,
			Message: fmt.Sprintf("cannot encode the pod for admission plugins: %v", err),
		}
	}

	for _, p := range c.plugins {
		resp, err := p.admit(ctx, prepared)
		if err != nil {
			if p.cfg.FailurePolicy == Ignore {
				log.Warn("admission plugin failed; admitting the pod (failurePolicy Ignore)",
					zap.String("admissionPlugin", p.cfg.Name), zap.Error(err))
				continue
			}
			return lifecycle.PodAdmitResult{
				Reason:  ReasonPluginError,
				Message: fmt.Sprintf("admission plugin %q failed and its failurePolicy is Fail: %v", p.cfg.Name, err),
			}
		}
		if !resp.Admit {
			reason := resp.Reason
			if reason == "" {
				reason = ReasonPluginRejected
			}
			return lifecycle.PodAdmitResult{
				Reason:  reason,
				Message: fmt.Sprintf("admission plugin %q: %s", p.cfg.Name, resp.Message),
			}
		}
	}
	return lifecycle.PodAdmitResult{Admit: true}
}

// admit asks one plugin, within its timeout. The plugin's client sends the
// active pods whole or as changes since its previous call, as the plugin
// declared at its start (sdk.GRPCClient).
func (p *hostPlugin) admit(ctx context.Context, in *sdk.Prepared) (*sdk.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(p.cfg.Timeout))
	defer cancel()
	inst, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	return inst.plugin.AdmitPrepared(ctx, in)
}

// Close stops every plugin process. Admissions after Close fail with each
// plugin's failure policy.
func (c *Chain) Close() error {
	for _, p := range c.plugins {
		p.close()
	}
	return nil
}
