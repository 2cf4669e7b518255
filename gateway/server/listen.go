package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/containerd/errdefs"
)

// listenUnix opens the CRI unix socket: it creates the parent directory,
// removes a stale socket left by a previous run, and applies mode and group.
// A socket another process still answers on is not removed: stealing a live
// runtime socket would leave that process serving nobody.
func listenUnix(path string, mode os.FileMode, group string) (_ net.Listener, retErr error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	defer func() {
		if retErr != nil {
			ln.Close() // also unlinks the socket file
		}
	}()
	if err := os.Chmod(path, mode); err != nil {
		return nil, fmt.Errorf("chmod socket %s: %w", path, err)
	}
	if group != "" {
		gid, err := lookupGID(group)
		if err != nil {
			return nil, err
		}
		if err := os.Chown(path, -1, gid); err != nil {
			return nil, fmt.Errorf("chown socket %s to group %s: %w", path, group, err)
		}
	}
	return ln, nil
}

func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket: %w", path, errdefs.ErrAlreadyExists)
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return fmt.Errorf("socket %s is in use by another process: %w", path, errdefs.ErrAlreadyExists)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// lookupGID accepts a numeric gid or a group name (os/user reads /etc/group
// in a static CGO_ENABLED=0 build).
func lookupGID(group string) (int, error) {
	if gid, err := strconv.Atoi(group); err == nil {
		return gid, nil
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		return 0, fmt.Errorf("socket group %q: %w: %w", group, errdefs.ErrNotFound, err)
	}
	return strconv.Atoi(g.Gid)
}

// serverTLSConfig builds the TCP listener's mutual TLS: clients must present a
// certificate signed by the client CA, and nothing older than TLS 1.2 is spoken.
func serverTLSConfig(c TLSConfig) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load server certificate: %w", err)
	}
	caPEM, err := os.ReadFile(c.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("read client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("client CA %s holds no PEM certificate: %w", c.ClientCAFile, errdefs.ErrInvalidArgument)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}, nil
}
