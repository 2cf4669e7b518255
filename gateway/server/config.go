package server

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/containerd/errdefs"

	"github.com/splitlet/splitlet/gateway/policy"
)

// Defaults applied by Config.withDefaults to zero fields.
const (
	// DefaultSocketMode lets the owner and the socket's group use the socket.
	DefaultSocketMode os.FileMode = 0o660
	// DefaultRequestTimeout matches the kubelet's --runtime-request-timeout.
	DefaultRequestTimeout = 2 * time.Minute
	// DefaultShutdownTimeout bounds the graceful part of a shutdown.
	DefaultShutdownTimeout = 10 * time.Second
	// maxMsgSize is the kubelet's CRI client limit (16 MiB); the gateway accepts
	// and sends messages as large as a kubelet would.
	maxMsgSize = 16 << 20
)

// Config configures a gateway server. Only SocketPath or TCPAddr is required.
type Config struct {
	// SocketPath is the unix socket the CRI services are served on. A stale
	// socket file is removed first; the parent directory is created.
	SocketPath string
	// SocketMode is applied to the socket with chmod; 0 means DefaultSocketMode.
	SocketMode os.FileMode
	// SocketGroup, when set, is the group name or numeric gid given ownership of
	// the socket so its members can reach the runtime through the gateway.
	SocketGroup string

	// TCPAddr, when set, adds a TCP listener (e.g. "0.0.0.0:9100") that requires
	// mutual TLS with the files in TLS.
	TCPAddr string
	TLS     TLSConfig

	// StreamingAddr, when set, is where the gateway fronts the runtime's
	// streaming server: Exec, Attach and PortForward return single-use
	// URLs of the gateway's proxy there (package streamproxy) instead of
	// the runtime's own. Empty passes the runtime's URLs through.
	StreamingAddr string
	// StreamingBaseURL, when set, is the scheme and host put in those URLs
	// (for a listener published under another address).
	StreamingBaseURL string

	// MetricsAddr, when set, serves /metrics and /healthz over plain HTTP.
	MetricsAddr string
	// Profiling adds Go's pprof handlers under /debug/pprof/ to the metrics
	// HTTP server, as the kubelet's enableProfilingHandler does. Off by
	// default: profiles expose the process's memory and command line.
	Profiling bool

	// DefaultTimeout is the deadline given to a unary call whose caller set
	// none. 0 means no default deadline. Streams never get one; see deadline.go.
	DefaultTimeout time.Duration
	// ShutdownTimeout bounds how long Serve waits for in-flight calls after its
	// context is done before it stops hard; 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration

	// Policy says which pods and containers are let through.
	Policy policy.Config

	// Backend selects the runtime Run builds: "fake" or "cri".
	Backend string
	// RuntimeEndpoint is the CRI endpoint of the cri backend.
	RuntimeEndpoint string
	// FakePreloadImages are images the fake backend holds from the start.
	FakePreloadImages []string
	// FakeSystemdCgroups has the fake backend report the systemd cgroup
	// driver.
	FakeSystemdCgroups bool
}

// TLSConfig names the PEM files of the TCP listener's mutual TLS.
type TLSConfig struct {
	CertFile     string // server certificate
	KeyFile      string // server private key
	ClientCAFile string // CA bundle client certificates must chain to
}

func (c Config) withDefaults() Config {
	if c.SocketMode == 0 {
		c.SocketMode = DefaultSocketMode
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	return c
}

// Validate reports configuration errors, wrapping errdefs.ErrInvalidArgument.
func (c Config) Validate() error {
	var errs []error
	if c.SocketPath == "" && c.TCPAddr == "" {
		errs = append(errs, errors.New("a unix socket path or a TCP address is required"))
	}
	if c.TCPAddr != "" && (c.TLS.CertFile == "" || c.TLS.KeyFile == "" || c.TLS.ClientCAFile == "") {
		errs = append(errs, errors.New("the TCP listener needs a TLS certificate, key and client CA (mutual TLS is required)"))
	}
	if c.DefaultTimeout < 0 {
		errs = append(errs, errors.New("the default timeout must not be negative"))
	}
	if c.SocketMode&^os.ModePerm != 0 {
		errs = append(errs, fmt.Errorf("socket mode %#o has bits beyond permissions", c.SocketMode))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gateway config: %w: %w", errdefs.ErrInvalidArgument, err)
	}
	return nil
}
