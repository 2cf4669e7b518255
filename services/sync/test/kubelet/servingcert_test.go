package kubelet_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// issueServingCert writes certFile and keyFile: a serving certificate for
// the node (DNS name node, IP ip) signed by the CA in caFile and caKeyFile,
// as a kubelet-serving CSR would have it (system:node:NODE in
// system:nodes). The API server runs with --kubelet-certificate-authority,
// so the self-signed certificate the kubelet makes without one is refused
// on every logs, exec or proxy request.
//
// TODO: use cluster.NodeServingCert once it is on main; until then this
// reads internal/cluster's pki/ca.key.
func issueServingCert(caFile, caKeyFile, node string, ip net.IP, certFile, keyFile string) error {
	caCert, caKey, err := loadCA(caFile, caKeyFile)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{node},
		IPAddresses:  []net.IP{ip},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// loadCA reads a PEM certificate and its PKCS#8 key, as internal/cluster
// writes them.
func loadCA(certFile, keyFile string) (*x509.Certificate, crypto.Signer, error) {
	blocks := make([]*pem.Block, 2)
	for i, f := range []string{certFile, keyFile} {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		if blocks[i], _ = pem.Decode(raw); blocks[i] == nil {
			return nil, nil, fmt.Errorf("%s: no PEM block", f)
		}
	}
	cert, err := x509.ParseCertificate(blocks[0].Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", certFile, err)
	}
	key, err := x509.ParsePKCS8PrivateKey(blocks[1].Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyFile, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: %T is not a signing key", keyFile, key)
	}
	return cert, signer, nil
}
