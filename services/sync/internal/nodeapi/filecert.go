package nodeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync/atomic"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// FileCert is a serving certificate read from its files and read again
// when they change, so a renewed certificate is served without a restart:
// the kubelet's kubeletServerCertificateDynamicFileManager
// (ReloadKubeletServerCertificateFile, beta and on by default in v1.36),
// on the same apiserver library. A pair that does not parse keeps the last
// good one in service.
type FileCert struct {
	content *dynamiccertificates.DynamicCertKeyPairContent
	current atomic.Pointer[tls.Certificate]
}

// NewFileCert reads certFile and keyFile; Run watches them.
func NewFileCert(certFile, keyFile string) (*FileCert, error) {
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("node-api-serving-cert", certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("node API serving certificate: %w", err)
	}
	f := &FileCert{content: content}
	f.Enqueue()
	if f.Current() == nil {
		return nil, fmt.Errorf("node API serving certificate: %s and %s are not a certificate and its key", certFile, keyFile)
	}
	content.AddListener(f)
	return f, nil
}

// Enqueue takes the files' current content; the library calls it when
// they change.
func (f *FileCert) Enqueue() {
	certPEM, keyPEM := f.content.CurrentCertKeyContent()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return
	}
	f.current.Store(&pair)
}

// Current is the certificate to serve (TLSOptions.Current).
func (f *FileCert) Current() *tls.Certificate { return f.current.Load() }

// Run watches the files until ctx ends.
func (f *FileCert) Run(ctx context.Context) { f.content.Run(ctx, 1) }
