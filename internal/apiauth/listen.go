// Package apiauth is how splitlet's own APIs — sync's PodService and
// admission's AdmissionService — are listened on and how their callers are
// authenticated, the same way in both processes.
//
// The kubelet authenticates every caller of its API. splitlet's APIs can
// create, delete and exec into pods, so they do too:
//
//   - By default they listen on a unix socket (Listen.Address
//     "unix:///run/splitlet/sync.sock"), made 0660 before anything can
//     connect: the file's owner and group are the callers, as for
//     containerd's socket. A token, when set, is required there as well.
//   - A TCP listener must authenticate: with a bearer token from
//     TokenFile (Authorization: Bearer …, compared in constant time), with
//     a client certificate signed by ClientCAFile (mutual TLS; needs
//     TLSCertFile and TLSKeyFile), or both (either credential passes).
//     Validate refuses a TCP listener with neither.
//
// Only the service's handler is wrapped (Authenticator): /healthz and
// /metrics on the same listener stay readable without a credential, as the
// kubelet's healthz port is. A refused call gets the RPC protocol's
// Unauthenticated (gRPC, gRPC-Web or Connect, as the call spoke), so every
// client sees the same code.
package apiauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// UnixScheme prefixes a unix socket address: "unix:///run/splitlet/sync.sock".
const UnixScheme = "unix://"

// SocketMode is the permission of a unix socket listener: owner and group
// may connect, nobody else.
const SocketMode = 0o660

// Listen says where one of splitlet's APIs listens and which credentials
// it accepts. Flag names are the same in every process (AddFlags).
type Listen struct {
	// Address is "unix:///path" or "host:port".
	Address string `json:"listen,omitempty"`
	// TokenFile holds the accepted bearer tokens, one per line.
	TokenFile string `json:"listenTokenFile,omitempty"`
	// TLSCertFile and TLSKeyFile are the listener's serving certificate;
	// with them a TCP listener speaks TLS.
	TLSCertFile string `json:"listenTLSCertFile,omitempty"`
	TLSKeyFile  string `json:"listenTLSPrivateKeyFile,omitempty"`
	// ClientCAFile verifies client certificates (mutual TLS).
	ClientCAFile string `json:"listenClientCAFile,omitempty"`
}

// SocketPath is the path of a unix socket address, or "" for TCP.
func (l Listen) SocketPath() string {
	path, ok := strings.CutPrefix(l.Address, UnixScheme)
	if !ok {
		return ""
	}
	return path
}

// Validate returns every problem of l, each naming its flag.
func (l Listen) Validate() []error {
	var errs []error
	if path := l.SocketPath(); path != "" || strings.HasPrefix(l.Address, UnixScheme) {
		if !filepath.IsAbs(path) {
			errs = append(errs, fmt.Errorf("--listen: %q is not unix:// and an absolute path", l.Address))
		}
		if l.TLSCertFile != "" || l.ClientCAFile != "" {
			errs = append(errs, errors.New("--listen-tls-cert-file and --listen-client-ca-file are for a TCP --listen; a unix socket is guarded by its file permissions (and --listen-token-file)"))
		}
		return errs
	}
	if _, _, err := net.SplitHostPort(l.Address); err != nil {
		return append(errs, fmt.Errorf("--listen: %q is neither unix:///path nor host:port: %v", l.Address, err))
	}
	if (l.TLSCertFile == "") != (l.TLSKeyFile == "") {
		errs = append(errs, errors.New("--listen-tls-cert-file and --listen-tls-private-key-file go together"))
	}
	if l.ClientCAFile != "" && l.TLSCertFile == "" {
		errs = append(errs, errors.New("--listen-client-ca-file needs --listen-tls-cert-file and --listen-tls-private-key-file: client certificates are only seen over TLS"))
	}
	if l.TokenFile == "" && l.ClientCAFile == "" {
		errs = append(errs, fmt.Errorf("--listen %s is TCP, where any local process could call it: set --listen-token-file (bearer tokens) or --listen-client-ca-file (mutual TLS), or listen on unix:///path", l.Address))
	}
	return errs
}

// Listener opens l's address: a unix socket with SocketMode (an older
// socket nobody answers on is replaced), or a TCP port, wrapped in TLS
// when a certificate is set. Closing it removes the socket file.
func (l Listen) Listener() (net.Listener, error) {
	if path := l.SocketPath(); path != "" {
		return listenUnix(path)
	}
	ln, err := net.Listen("tcp", l.Address)
	if err != nil {
		return nil, err
	}
	if l.TLSCertFile == "" {
		return ln, nil
	}
	cfg, err := l.serverTLS()
	if err != nil {
		ln.Close()
		return nil, err
	}
	return tls.NewListener(ln, cfg), nil
}

// serverTLS is the listener's TLS: HTTP/2 and HTTP/1.1, and a client
// certificate verified when one is sent (not required, so /healthz answers
// without one; Authenticator requires it, or a token, of the service).
func (l Listen) serverTLS() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(l.TLSCertFile, l.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--listen-tls-cert-file: %w", err)
	}
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
		MinVersion:   tls.VersionTLS12,
	}
	if l.ClientCAFile != "" {
		if cfg.ClientCAs, err = loadPool(l.ClientCAFile); err != nil {
			return nil, fmt.Errorf("--listen-client-ca-file: %w", err)
		}
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// listenUnix binds path so that no caller can connect before the socket's
// mode is SocketMode: it binds a temporary name in the same directory,
// sets the mode, then renames it into place.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	_ = os.Remove(tmp)
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	// The listener would unlink tmp on Close; socketListener removes path.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, SocketMode); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, err
	}
	return &socketListener{Listener: ln, path: path}, nil
}

// removeStaleSocket removes a socket left by a process that is gone; a
// socket something still answers on is an error (two servers on one path
// would each take some callers), and so is a path that is not a socket.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("%s: another process is listening on it", path)
	}
	return os.Remove(path)
}

type socketListener struct {
	net.Listener
	path string
}

func (s *socketListener) Close() error {
	err := s.Listener.Close()
	if rmErr := os.Remove(s.path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) && err == nil {
		err = rmErr
	}
	return err
}

func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}
