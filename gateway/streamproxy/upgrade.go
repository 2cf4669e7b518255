package streamproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// dialTimeout bounds the connection to the runtime's streaming server.
const dialTimeout = 10 * time.Second

// forward proxies one request to target, the runtime's URL, and returns
// the status the runtime answered; an error means the runtime could not be
// asked (nothing was written to w). Every stream is an upgrade (SPDY or
// WebSocket): forward does what httputil.ReverseProxy does for one, with
// one difference that the streams' throughput shows (BENCHMARKS.md): once
// switched, both ends are plain TCP connections copied to each other with
// io.Copy, which Linux does with splice(2), where the reverse proxy copies
// through buffers of its own. Any other request gets the runtime's answer,
// as is.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, target *url.URL) (int, error) {
	out := r.Clone(r.Context())
	u := *target
	if u.RawQuery == "" {
		u.RawQuery = r.URL.RawQuery // see Rewrite in New
	}
	out.URL, out.Host, out.RequestURI = &u, u.Host, ""
	backend, err := p.dialRuntime(r.Context(), &u)
	if err != nil {
		return 0, err
	}
	if err := out.Write(backend); err != nil {
		backend.Close()
		return 0, err
	}
	br := bufio.NewReader(backend)
	resp, err := http.ReadResponse(br, out)
	if err != nil {
		backend.Close()
		return 0, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer backend.Close()
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return resp.StatusCode, nil
	}
	client, cbuf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		backend.Close()
		return 0, err
	}
	defer client.Close()
	defer backend.Close()
	if err := resp.Write(client); err != nil {
		return resp.StatusCode, nil
	}
	// Bytes either side sent right after the handshake and already read
	// into a buffer go first.
	if err := drain(client, br); err != nil {
		return resp.StatusCode, nil
	}
	if err := drain(backend, cbuf.Reader); err != nil {
		return resp.StatusCode, nil
	}
	// The stream ends when both directions have, or when the gateway
	// shuts down (the request's context is the proxy's BaseContext).
	stop := context.AfterFunc(r.Context(), func() {
		client.Close()
		backend.Close()
	})
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { pipe(backend, client) })
	pipe(client, backend)
	wg.Wait()
	return resp.StatusCode, nil
}

// pipe copies src to dst until src ends, then half-closes dst so the
// other side sees the end too.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		dst.Close()
	}
}

func drain(dst io.Writer, b *bufio.Reader) error {
	if n := b.Buffered(); n > 0 {
		buf, _ := b.Peek(n)
		if _, err := dst.Write(buf); err != nil {
			return err
		}
		_, _ = b.Discard(n)
	}
	return nil
}

// dialRuntime connects to the runtime's streaming server; TLS as
// runtimeTransport explains.
func (p *Proxy) dialRuntime(ctx context.Context, u *url.URL) (net.Conn, error) {
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[u.Scheme == "https"])
	}
	d := &net.Dialer{Timeout: dialTimeout}
	if u.Scheme == "https" {
		return (&tls.Dialer{NetDialer: d, Config: &tls.Config{InsecureSkipVerify: true}}).DialContext(ctx, "tcp", host) //nolint:gosec // see runtimeTransport
	}
	return d.DialContext(ctx, "tcp", host)
}
