// Package streamproxy fronts the container runtime's streaming server, so
// that the gateway, which owns the runtime's socket, also owns every stream
// into a container.
//
// CRI Exec, Attach and PortForward do not stream: they return a one-time URL
// of the runtime's streaming server, which the client (sync's node API,
// splitctl, crictl) then dials and upgrades (SPDY or WebSocket). The gateway
// swaps that URL for one of its own (Front) and proxies the upgraded
// connection to the runtime's URL byte for byte (ServeHTTP), so
//
//   - the runtime's streaming server need not be reachable by the client
//     (containerd's listens on its own loopback);
//   - every stream is counted in the gateway's metrics and ends when the
//     gateway shuts down;
//   - a URL works once and expires, as the kubelet's streaming server's
//     (k8s.io/cri-streaming requestCache: 8 random bytes, a one-minute TTL,
//     at most 1000 URLs outstanding; an unknown or spent token is 404).
//
// The request the URL was issued for has already passed the gateway's
// validation and policy as a CRI call, so the proxy checks nothing else.
package streamproxy

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Kind is the kind of stream a URL is for; it is the URL's first path
// segment, as on the kubelet's streaming server.
type Kind string

const (
	Exec        Kind = "exec"
	Attach      Kind = "attach"
	PortForward Kind = "portforward"
)

// The kubelet streaming server's request cache limits (k8s.io/cri-streaming
// pkg/streaming/request_cache.go).
const (
	DefaultTTL         = time.Minute
	DefaultMaxInFlight = 1000
	tokenBytes         = 8
)

// Options configures a Proxy. Only Listener is required.
type Options struct {
	// Listener is where the proxy serves; the caller opened it.
	Listener net.Listener
	// BaseURL prefixes the URLs Front returns (scheme and host, e.g.
	// "http://127.0.0.1:10010" when the listener is published under another
	// address); empty means http://<the listener's address>.
	BaseURL string
	// TTL is how long a URL stays usable; 0 means DefaultTTL.
	TTL time.Duration
	// MaxInFlight bounds the URLs issued and not yet used or expired; 0
	// means DefaultMaxInFlight.
	MaxInFlight int
	// BaseContext is every proxied request's parent: cancelling it ends
	// every open stream. nil means context.Background().
	BaseContext context.Context
	// Registerer receives the proxy's metrics; nil registers none.
	Registerer prometheus.Registerer
	Logger     *zap.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Proxy issues single-use URLs for runtime streaming URLs and proxies them.
// Create it with New, serve it with Serve.
type Proxy struct {
	opts    Options
	base    *url.URL
	srv     *http.Server
	metrics *metrics

	mu     sync.Mutex
	tokens map[string]*entry

	// ended, when set (tests), is told of each stream's end once it is
	// counted.
	ended func()
}

type entry struct {
	kind    Kind
	target  *url.URL
	expires time.Time
}

// New builds a proxy on opts.Listener.
func New(opts Options) (*Proxy, error) {
	if opts.Listener == nil {
		return nil, errors.New("streamproxy: a listener is required")
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.BaseContext == nil {
		opts.BaseContext = context.Background()
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	raw := opts.BaseURL
	if raw == "" {
		raw = "http://" + opts.Listener.Addr().String()
	}
	base, err := url.Parse(raw)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("streaming base URL %q: want http://host:port: %w", raw, errdefs.ErrInvalidArgument)
	}
	p := &Proxy{opts: opts, base: base, tokens: map[string]*entry{}, metrics: newMetrics(opts.Registerer)}
	mux := http.NewServeMux()
	for _, k := range []Kind{Exec, Attach, PortForward} {
		mux.HandleFunc("/"+string(k)+"/{token}", func(w http.ResponseWriter, r *http.Request) { p.serve(k, w, r) })
	}
	p.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return opts.BaseContext },
	}
	return p, nil
}

// Serve serves until Shutdown; it returns nil after a shutdown.
func (p *Proxy) Serve() error {
	if err := p.srv.Serve(p.opts.Listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting streams and waits, within ctx, for requests
// still being set up. Open streams end with Options.BaseContext.
func (p *Proxy) Shutdown(ctx context.Context) error {
	err := p.srv.Shutdown(ctx)
	if err != nil {
		p.srv.Close()
	}
	return err
}

// Front records a runtime streaming URL and returns the single-use URL of
// the proxy that stands for it. Too many outstanding URLs is
// ResourceExhausted, as the kubelet's streaming server refuses a 1001st.
func (p *Proxy) Front(kind Kind, runtimeURL string) (string, error) {
	target, err := url.Parse(runtimeURL)
	if err != nil || target.Host == "" {
		return "", fmt.Errorf("the runtime returned an unusable %s URL %q", kind, runtimeURL)
	}
	token, err := newToken()
	if err != nil {
		return "", err
	}
	now := p.opts.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	if len(p.tokens) >= p.opts.MaxInFlight {
		return "", fmt.Errorf("too many outstanding streaming URLs (%d): %w", len(p.tokens), errdefs.ErrResourceExhausted)
	}
	p.tokens[token] = &entry{kind: kind, target: target, expires: now.Add(p.opts.TTL)}
	p.metrics.outstanding.Set(float64(len(p.tokens)))
	u := *p.base
	u.Path = "/" + string(kind) + "/" + token
	return u.String(), nil
}

// expireLocked drops expired tokens. The map is at most MaxInFlight long
// and Front is called once per stream, so a full scan is cheap enough.
func (p *Proxy) expireLocked(now time.Time) {
	for t, e := range p.tokens {
		if !now.Before(e.expires) {
			delete(p.tokens, t)
		}
	}
}

// consume takes the token's entry out, so a URL is used once.
func (p *Proxy) consume(kind Kind, token string) (*entry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.tokens[token]
	if !ok || e.kind != kind {
		return nil, false
	}
	delete(p.tokens, token)
	p.metrics.outstanding.Set(float64(len(p.tokens)))
	if !p.opts.Now().Before(e.expires) {
		return nil, false
	}
	return e, true
}

// serve proxies one stream. An unknown, spent or expired token is 404, as
// on the kubelet's streaming server (serveExec and its siblings).
func (p *Proxy) serve(kind Kind, w http.ResponseWriter, r *http.Request) {
	e, ok := p.consume(kind, r.PathValue("token"))
	if !ok {
		p.metrics.streams.WithLabelValues(string(kind), "not_found").Inc()
		http.NotFound(w, r)
		return
	}
	if p.ended != nil {
		// Deferred first so it runs last, after the gauge's decrement:
		// the stream is counted in full when it is told.
		defer p.ended()
	}
	active := p.metrics.active.WithLabelValues(string(kind))
	active.Inc()
	defer active.Dec()
	start := p.opts.Now()
	status, err := p.forward(w, r, e.target)
	if err != nil {
		p.upstreamError(w, r, err)
		status = http.StatusBadGateway
	}
	result := "proxied"
	if status != http.StatusSwitchingProtocols && status >= http.StatusBadRequest {
		result = "error"
	}
	p.metrics.streams.WithLabelValues(string(kind), result).Inc()
	p.metrics.duration.WithLabelValues(string(kind)).Observe(p.opts.Now().Sub(start).Seconds())
}

// upstreamError answers a stream the runtime could not be reached for.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() == nil {
		p.opts.Logger.Warn("proxy a stream to the runtime", zap.String("path", r.URL.Path), zap.Error(err))
	}
	http.Error(w, "the runtime's streaming server: "+err.Error(), http.StatusBadGateway)
}

func newToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("streaming token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
