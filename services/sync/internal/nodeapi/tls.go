package nodeapi

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// TLSOptions configure the node API's serving certificate.
type TLSOptions struct {
	// CertFile and KeyFile are the serving certificate and key (the
	// kubelet's --tls-cert-file and --tls-private-key-file); both or
	// neither.
	CertFile, KeyFile string
	// CertDir holds the self-signed pair made when CertFile and KeyFile
	// are empty (the kubelet's --cert-dir): kubelet.crt and kubelet.key.
	CertDir string
	// Host and IPs are the self-signed certificate's names: the node name
	// and its addresses.
	Host string
	IPs  []net.IP
	// Current, when set, is the certificate to serve with, read at each
	// handshake (a rotating manager's; --rotate-server-certificates); a
	// nil answer fails the handshake. CertFile, KeyFile and CertDir are
	// then unused.
	Current func() *tls.Certificate
	// RequestClientCert asks clients for a certificate in the handshake,
	// which the authenticator then verifies against the client CA (set it
	// when there is one, as the kubelet does).
	RequestClientCert bool
}

// TLSConfig returns the node API's TLS configuration: the given serving
// certificate, or a self-signed one kept in CertDir, made on first use and
// reused after (a restart keeps the certificate clients may have pinned).
// Matches the kubelet's InitializeTLS without --rotate-server-certificates.
func TLSConfig(opts TLSOptions) (*tls.Config, error) {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
	}
	if opts.RequestClientCert {
		cfg.ClientAuth = tls.RequestClientCert
	}
	if opts.Current != nil {
		// The kubelet's InitializeTLS with a server certificate manager.
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := opts.Current(); c != nil {
				return c, nil
			}
			return nil, errors.New("no serving certificate available for the node API")
		}
		return cfg, nil
	}
	certFile, keyFile := opts.CertFile, opts.KeyFile
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("--node-api-tls-cert-file and --node-api-tls-private-key-file go together")
	}
	if certFile == "" {
		var err error
		if certFile, keyFile, err = selfSigned(opts); err != nil {
			return nil, err
		}
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("node API serving certificate: %w", err)
	}
	cfg.Certificates = []tls.Certificate{cert}
	return cfg, nil
}

// selfSigned returns CertDir's kubelet.crt and kubelet.key, generating them
// when they cannot be read.
func selfSigned(opts TLSOptions) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(opts.CertDir, "kubelet.crt"), filepath.Join(opts.CertDir, "kubelet.key")
	ok, err := certutil.CanReadCertAndKey(certFile, keyFile)
	if err != nil {
		return "", "", fmt.Errorf("self-signed node API certificate: %w", err)
	}
	if ok {
		return certFile, keyFile, nil
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey(opts.Host, opts.IPs, nil)
	if err != nil {
		return "", "", fmt.Errorf("generate a self-signed node API certificate: %w", err)
	}
	if err := certutil.WriteCert(certFile, cert); err != nil {
		return "", "", fmt.Errorf("write %s: %w", certFile, err)
	}
	if err := keyutil.WriteKey(keyFile, key); err != nil {
		return "", "", fmt.Errorf("write %s: %w", keyFile, err)
	}
	return certFile, keyFile, nil
}
