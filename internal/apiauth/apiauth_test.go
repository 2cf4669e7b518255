package apiauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"
)

const procedure = "/splitlet.test.v1.Test/Call"

// serve runs a Connect handler of procedure behind l.Authenticator on
// l.Listener, and /healthz beside it unauthenticated, as the services do.
func serve(t *testing.T, l Listen) {
	t.Helper()
	call := connect.NewUnaryHandler(procedure, func(context.Context, *connect.Request[emptypb.Empty]) (*connect.Response[emptypb.Empty], error) {
		return connect.NewResponse(&emptypb.Empty{}), nil
	})
	guard, err := l.Authenticator()
	if err != nil {
		t.Fatal(err)
	}
	guarded := guard(call)
	mux := http.NewServeMux()
	mux.Handle(procedure, guarded)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })
	ln, err := l.Listener()
	if err != nil {
		t.Fatal(err)
	}
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: p}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// callCode makes one call of procedure in each RPC protocol and returns
// the codes (0 for success).
func callCodes(t *testing.T, d Dial) map[string]connect.Code {
	t.Helper()
	codes := map[string]connect.Code{}
	for name, h2c := range map[string]bool{"grpc": true, "connect": false, "grpcweb": false} {
		hc, base, err := d.Client(h2c)
		if err != nil {
			t.Fatal(err)
		}
		opts := map[string][]connect.ClientOption{"grpc": {connect.WithGRPC()}, "grpcweb": {connect.WithGRPCWeb()}}[name]
		c := connect.NewClient[emptypb.Empty, emptypb.Empty](hc, base+procedure, opts...)
		_, err = c.CallUnary(context.Background(), connect.NewRequest(&emptypb.Empty{}))
		codes[name] = connect.CodeOf(err)
		if err == nil {
			codes[name] = 0
		}
	}
	return codes
}

func wantCodes(t *testing.T, got map[string]connect.Code, want connect.Code) {
	t.Helper()
	for proto, code := range got {
		if code != want {
			t.Errorf("%s call: code %v, want %v", proto, code, want)
		}
	}
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUnixSocketIsOwnerAndGroupOnlyAndTrustsItsCallers(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "run", "api.sock")
	serve(t, Listen{Address: UnixScheme + sock})
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != SocketMode {
		t.Fatalf("socket mode %v, want a socket with %o", fi.Mode(), SocketMode)
	}
	wantCodes(t, callCodes(t, Dial{Endpoint: UnixScheme + sock}), 0)
}

func TestUnixSocketWithATokenFileRequiresTheToken(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	serve(t, Listen{Address: UnixScheme + sock, TokenFile: writeFile(t, "tokens", "\n  first \nsecond\n")})
	wantCodes(t, callCodes(t, Dial{Endpoint: UnixScheme + sock}), connect.CodeUnauthenticated)
	wantCodes(t, callCodes(t, Dial{Endpoint: UnixScheme + sock, Token: "second"}), 0)
	wantCodes(t, callCodes(t, Dial{Endpoint: UnixScheme + sock, Token: "third"}), connect.CodeUnauthenticated)
}

func TestTCPWithATokenRefusesCallsWithoutIt(t *testing.T) {
	addr := freeAddr(t)
	serve(t, Listen{Address: addr, TokenFile: writeFile(t, "tokens", "s3cret\n")})
	wantCodes(t, callCodes(t, Dial{Endpoint: addr}), connect.CodeUnauthenticated)
	wantCodes(t, callCodes(t, Dial{Endpoint: addr, Token: "s3cre"}), connect.CodeUnauthenticated)
	wantCodes(t, callCodes(t, Dial{Endpoint: addr, TokenFile: writeFile(t, "mine", "s3cret\n")}), 0)

	// /healthz stays readable without a credential.
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
}

func TestMutualTLSAcceptsACertificateTheCASigned(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, dir, "ca")
	ca.issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	ca.issue(t, dir, "client", x509.ExtKeyUsageClientAuth)
	other := newCA(t, dir, "other")
	other.issue(t, dir, "stranger", x509.ExtKeyUsageClientAuth)
	addr := freeAddr(t)
	serve(t, Listen{Address: addr, TLSCertFile: filepath.Join(dir, "server.crt"), TLSKeyFile: filepath.Join(dir, "server.key"),
		ClientCAFile: filepath.Join(dir, "ca.crt")})

	base := Dial{Endpoint: "https://" + addr, CAFile: filepath.Join(dir, "ca.crt")}
	wantCodes(t, callCodes(t, base), connect.CodeUnauthenticated)
	withCert := base
	withCert.CertFile, withCert.KeyFile = filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	wantCodes(t, callCodes(t, withCert), 0)

	// Go's client sends no certificate the server's CA list does not
	// name, so a certificate of another CA makes an unauthenticated call.
	stranger := base
	stranger.CertFile, stranger.KeyFile = filepath.Join(dir, "stranger.crt"), filepath.Join(dir, "stranger.key")
	wantCodes(t, callCodes(t, stranger), connect.CodeUnauthenticated)
}

func TestValidateRefusesAnUnauthenticatedTCPListener(t *testing.T) {
	for _, tc := range []struct {
		l    Listen
		want string // "" for valid
	}{
		{Listen{Address: "unix:///run/splitlet/sync.sock"}, ""},
		{Listen{Address: "unix://run/sync.sock"}, "absolute path"},
		{Listen{Address: "127.0.0.1:7443"}, "--listen-token-file"},
		{Listen{Address: "127.0.0.1:7443", TokenFile: "/t"}, ""},
		{Listen{Address: "127.0.0.1:7443", TLSCertFile: "/c", TLSKeyFile: "/k", ClientCAFile: "/ca"}, ""},
		{Listen{Address: "127.0.0.1:7443", ClientCAFile: "/ca"}, "needs --listen-tls-cert-file"},
		{Listen{Address: "127.0.0.1:7443", TokenFile: "/t", TLSCertFile: "/c"}, "go together"},
		{Listen{Address: "unix:///s", TLSCertFile: "/c", TLSKeyFile: "/k"}, "for a TCP --listen"},
		{Listen{Address: "localhost"}, "neither unix:///path nor host:port"},
	} {
		err := errors.Join(tc.l.Validate()...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.l, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one containing %q", tc.l, err, tc.want)
		}
	}
}

func TestASocketStillServedIsNotTakenOver(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	serve(t, Listen{Address: UnixScheme + sock})
	if _, err := (Listen{Address: UnixScheme + sock}).Listener(); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("second listener on a served socket: %v", err)
	}
}

func TestAStaleSocketIsReplaced(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, as after a crash
	serve(t, Listen{Address: UnixScheme + sock})
	wantCodes(t, callCodes(t, Dial{Endpoint: UnixScheme + sock}), 0)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T, dir, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	writePEM(t, filepath.Join(dir, name+".crt"), "CERTIFICATE", der)
	return testCA{cert: cert, key: key}
}

func (ca testCA) issue(t *testing.T, dir, name string, usage x509.ExtKeyUsage) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".crt"), "CERTIFICATE", der)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".key"), "EC PRIVATE KEY", keyDER)
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
