package apiauth

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// Dial says how a client reaches one of splitlet's APIs and which
// credential it shows.
type Dial struct {
	// Endpoint is unix:///path, http://host:port, https://host:port, or
	// host:port (http).
	Endpoint string
	// Token is sent as 'Authorization: Bearer Token'; when empty, the
	// first line of TokenFile is.
	Token     string
	TokenFile string
	// CAFile verifies an https server (empty: the system's roots);
	// CertFile and KeyFile are the client certificate.
	CAFile, CertFile, KeyFile string
}

// Client returns an HTTP client for d and the base URL Connect clients
// take. With h2c, cleartext connections (TCP or the unix socket) speak
// HTTP/2 with prior knowledge, which gRPC needs; TLS ones negotiate it.
func (d Dial) Client(h2c bool) (*http.Client, string, error) {
	base, socket, err := d.target()
	if err != nil {
		return nil, "", err
	}
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetHTTP1(!h2c)
	tr.Protocols.SetUnencryptedHTTP2(h2c)
	if socket != "" {
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}
	}
	if strings.HasPrefix(base, "https://") {
		tr.Protocols.SetHTTP1(true)
		tr.Protocols.SetHTTP2(true)
		if tr.TLSClientConfig, err = d.clientTLS(); err != nil {
			return nil, "", err
		}
	}
	token, err := d.token()
	if err != nil {
		return nil, "", err
	}
	var rt http.RoundTripper = tr
	if token != "" {
		rt = &bearer{next: tr, value: "Bearer " + token}
	}
	return &http.Client{Transport: rt}, base, nil
}

// target is the base URL and, for a unix endpoint, the socket's path.
func (d Dial) target() (base, socket string, err error) {
	if path, ok := strings.CutPrefix(d.Endpoint, UnixScheme); ok {
		if !strings.HasPrefix(path, "/") {
			return "", "", fmt.Errorf("endpoint %q: a unix socket is unix:// and an absolute path", d.Endpoint)
		}
		// The host is never dialled; it only makes a valid URL.
		return "http://localhost", path, nil
	}
	addr := d.Endpoint
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", fmt.Errorf("endpoint %q is neither unix:///path, http(s)://host:port nor host:port", d.Endpoint)
	}
	return strings.TrimRight(u.String(), "/"), "", nil
}

func (d Dial) clientTLS() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if d.CAFile != "" {
		pool, err := loadPool(d.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		cfg.RootCAs = pool
	}
	if d.CertFile != "" || d.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(d.CertFile, d.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func (d Dial) token() (string, error) {
	if d.Token != "" || d.TokenFile == "" {
		return d.Token, nil
	}
	data, err := os.ReadFile(d.TokenFile)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	for line := range strings.Lines(string(data)) {
		if t := strings.TrimSpace(line); t != "" {
			return t, nil
		}
	}
	return "", fmt.Errorf("token file %s holds no token", d.TokenFile)
}

// bearer adds the token to every request that carries none.
type bearer struct {
	next  http.RoundTripper
	value string
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", b.value)
	return b.next.RoundTrip(r)
}
