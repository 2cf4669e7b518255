package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// writeCert writes a self-signed client certificate valid until notAfter
// and its key into one PEM file, as the certificate store's
// kubelet-client-current.pem, and returns its path.
func writeCert(t *testing.T, dir string, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:node:n1"},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	body := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	path := filepath.Join(dir, "kubelet-client-current.pem")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The kubeconfig written after bootstrapping points at the certificate
// store's file, and is taken as valid (no new request on restart) only
// while that certificate can be loaded and has not expired: the kubelet's
// isClientConfigStillValid.
func TestWrittenKubeconfigValidWhileItsCertificateIs(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		notAfter time.Time // zero: no certificate file yet
		want     bool
	}{
		{desc: "certificate valid for a day", notAfter: time.Now().Add(24 * time.Hour), want: true},
		{desc: "certificate expired an hour ago", notAfter: time.Now().Add(-time.Hour), want: false},
		{desc: "certificate not issued yet", want: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			pemPath := filepath.Join(dir, "kubelet-client-current.pem")
			if !tc.notAfter.IsZero() {
				pemPath = writeCert(t, dir, tc.notAfter)
			}
			// Any certificate stands for the cluster CA.
			ca := writeCert(t, t.TempDir(), time.Now().Add(time.Hour))
			kubeconfig := filepath.Join(dir, "kubeconfig")
			cfg := &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{
				CAFile: ca, CertFile: pemPath, KeyFile: pemPath}}
			if err := writeKubeconfig(cfg, kubeconfig); err != nil {
				t.Fatal(err)
			}
			if got := clientConfigValid(kubeconfig); got != tc.want {
				t.Errorf("clientConfigValid = %v, want %v", got, tc.want)
			}
			if tc.notAfter.IsZero() {
				return // client-go refuses to load a kubeconfig naming absent files
			}
			back, err := loadRESTConfig(kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			if back.Host != cfg.Host || back.CAFile != cfg.CAFile || back.CertFile != pemPath || back.KeyFile != pemPath {
				t.Errorf("read back host %s CA %s cert %s key %s, want %s %s %s %s", back.Host, back.CAFile, back.CertFile, back.KeyFile,
					cfg.Host, cfg.CAFile, pemPath, pemPath)
			}
		})
	}
	if clientConfigValid(filepath.Join(t.TempDir(), "absent")) {
		t.Error("a missing kubeconfig is valid")
	}
}
