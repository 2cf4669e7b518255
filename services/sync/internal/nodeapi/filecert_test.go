package nodeapi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

func writePair(t *testing.T, dir, host string) []byte {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The key first: the watcher reads the pair once the certificate
	// changes.
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certPEM
}

// A renewed certificate written over the files is served without a
// restart; a broken pair leaves the last good one in service.
func TestFileCertFollowsItsFiles(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "first.example")
	f, err := NewFileCert(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	served := func() string { return string(f.Current().Certificate[0]) }
	first := served()
	// Told after FileCert took each change the library saw (listeners
	// run in the order they were added).
	changed := make(chan struct{}, 16)
	f.content.AddListener(notify(func() { changed <- struct{}{} }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.Run(ctx)

	writePair(t, dir, "second.example")
	timeout := time.After(90 * time.Second) // the library also re-reads every minute
	for served() == first {
		select {
		case <-changed:
		case <-timeout:
			t.Fatal("the renewed certificate was never served")
		}
	}
	renewed := served()
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.Enqueue()
	if served() != renewed {
		t.Error("a broken certificate file replaced the served certificate")
	}

	if _, err := NewFileCert(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err == nil {
		t.Error("NewFileCert on a broken pair: no error")
	}
}

// notify is a dynamiccertificates.Listener calling a function.
type notify func()

func (n notify) Enqueue() { n() }
