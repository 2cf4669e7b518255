package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testCA signs certificates for the mutual TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns PEM certificate and key for a server (IP SAN 127.0.0.1) or a client.
func (ca *testCA) issue(t *testing.T, cn string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "splitlet test CA")
	otherCA := newTestCA(t, "someone else's CA")
	srvCert, srvKey := ca.issue(t, "gateway", true)
	cfg := Config{
		TCPAddr: "127.0.0.1:0",
		TLS: TLSConfig{
			CertFile:     writeFile(t, dir, "server.crt", srvCert),
			KeyFile:      writeFile(t, dir, "server.key", srvKey),
			ClientCAFile: writeFile(t, dir, "ca.crt", ca.pem),
		},
	}
	h := start(t, cfg, newTestRuntime())
	addr := h.srv.TCPAddr().String()

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.pem)
	clientCert := func(signer *testCA) []tls.Certificate {
		c, k := signer.issue(t, "sync", false)
		pair, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return []tls.Certificate{pair}
	}
	tests := []struct {
		desc   string
		tls    *tls.Config
		wantOK bool
	}{
		{desc: "client certificate from the client CA is accepted",
			tls: &tls.Config{RootCAs: roots, Certificates: clientCert(ca)}, wantOK: true},
		{desc: "no client certificate is refused",
			tls: &tls.Config{RootCAs: roots}},
		{desc: "client certificate from another CA is refused",
			tls: &tls.Config{RootCAs: roots, Certificates: clientCert(otherCA)}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(tc.tls)))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err = runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{})
			if tc.wantOK && err != nil {
				t.Fatalf("Version over mTLS: %v", err)
			}
			if !tc.wantOK && err == nil {
				t.Fatal("Version succeeded, want the handshake refused")
			}
		})
	}

	t.Run("the unix socket stays plain", func(t *testing.T) {
		if _, err := h.runtime().Version(context.Background(), &runtimeapi.VersionRequest{}); err != nil {
			t.Fatalf("Version over the unix socket: %v", err)
		}
	})
}
