package nodeapi

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
)

// testCA is a certificate authority that signs client certificates.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
	file string
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: name}, key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name+".crt")
	if err := certutil.WriteCert(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})); err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, file: file}
}

// clientCert is a client certificate for user cn signed by ca.
func (ca *testCA) clientCert(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// reviews answers TokenReviews for the tokens it knows and
// SubjectAccessReviews from the subresources each user is allowed on the
// test node, counting both: a hand-written API server for the two reviews.
type reviews struct {
	tokens  map[string]string   // token -> user
	allowed map[string][]string // user -> subresources of nodes/testNode
	tokenN  atomic.Int32
	sarN    atomic.Int32
}

// client is a clientset whose API server is rv: a TLS server answering
// the two review resources the way kube-apiserver does.
func (rv *reviews) client(t *testing.T) kubernetes.Interface {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, r *http.Request) {
		rv.tokenN.Add(1)
		var tr authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&tr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if u, ok := rv.tokens[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&tr)
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		rv.sarN.Add(1)
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if ra := sar.Spec.ResourceAttributes; ra != nil && ra.Resource == "nodes" && ra.Name == testNode {
			for _, sub := range rv.allowed[sar.Spec.User] {
				sar.Status.Allowed = sar.Status.Allowed || sub == ra.Subresource
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&sar)
	})
	ts := httptest.NewTLSServer(mux)
	t.Cleanup(ts.Close)
	c, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestBuildAuth runs the node API behind the authenticator and authorizer
// BuildAuth makes from k8s.io/apiserver's factories, over TLS with client
// certificates requested, against TokenReview and SubjectAccessReview
// answered by a fake API server.
func TestBuildAuth(t *testing.T) {
	ca, otherCA := newTestCA(t, "client-ca"), newTestCA(t, "other-ca")
	rv := &reviews{
		tokens:  map[string]string{"alice-token": "alice", "bob-token": "bob"},
		allowed: map[string][]string{"alice": {"proxy"}, "kube-apiserver-kubelet-client": {"proxy"}},
	}
	withAPI, run, err := BuildAuth(AuthOptions{Client: rv.client(t), ClientCAFile: ca.file})
	if err != nil {
		t.Fatal(err)
	}
	go run(t.Context())
	certOnly, run2, err := BuildAuth(AuthOptions{ClientCAFile: ca.file})
	if err != nil {
		t.Fatal(err)
	}
	go run2(t.Context())

	serve := func(auth Auth) *httptest.Server {
		ts := httptest.NewUnstartedServer(newFixture(t, auth).srv)
		ts.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
		ts.StartTLS()
		t.Cleanup(ts.Close)
		return ts
	}
	apiTS, certTS := serve(withAPI), serve(certOnly)
	do := func(ts *httptest.Server, token string, cert *tls.Certificate) int {
		t.Helper()
		tr := ts.Client().Transport.(*http.Transport).Clone()
		if cert != nil {
			tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
		}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/containerLogs/default/web/app", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	apiClient := ca.clientCert(t, "kube-apiserver-kubelet-client")
	stranger := ca.clientCert(t, "stranger")
	forged := otherCA.clientCert(t, "kube-apiserver-kubelet-client")
	for _, tc := range []struct {
		desc  string
		ts    *httptest.Server
		token string
		cert  *tls.Certificate
		want  int
	}{
		{desc: "no credentials: 401", ts: apiTS, want: 401},
		{desc: "a token TokenReview refuses: 401", ts: apiTS, token: "mallory-token", want: 401},
		{desc: "a token of a user allowed nodes/proxy: 200", ts: apiTS, token: "alice-token", want: 200},
		{desc: "a token of a user not allowed: 403", ts: apiTS, token: "bob-token", want: 403},
		{desc: "the API server's client certificate: 200", ts: apiTS, cert: &apiClient, want: 200},
		{desc: "a client certificate of a user not allowed: 403", ts: apiTS, cert: &stranger, want: 403},
		{desc: "a certificate from another CA: 401", ts: apiTS, cert: &forged, want: 401},
		{desc: "client certificates only: a verified one is allowed everything", ts: certTS, cert: &stranger, want: 200},
		{desc: "client certificates only: a token is nobody", ts: certTS, token: "alice-token", want: 401},
		{desc: "client certificates only: another CA's certificate is nobody", ts: certTS, cert: &forged, want: 401},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := do(tc.ts, tc.token, tc.cert); got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
		})
	}

	// Answers are cached as by the kubelet: asking again costs no review.
	tokens, sars := rv.tokenN.Load(), rv.sarN.Load()
	for _, token := range []string{"alice-token", "bob-token"} {
		do(apiTS, token, nil)
	}
	if rv.tokenN.Load() != tokens || rv.sarN.Load() != sars {
		t.Errorf("repeated requests made %d TokenReviews and %d SubjectAccessReviews, want none (cached)",
			rv.tokenN.Load()-tokens, rv.sarN.Load()-sars)
	}
}

func TestBuildAuthRefuses(t *testing.T) {
	ca := newTestCA(t, "ca")
	for _, tc := range []struct {
		desc string
		opts AuthOptions
		is   error
	}{
		{desc: "nothing to authenticate with", opts: AuthOptions{}, is: ErrNoAuth},
		{desc: "anonymous without an API server to authorize it", opts: AuthOptions{ClientCAFile: ca.file, Anonymous: true}},
		{desc: "a client CA file that is not there", opts: AuthOptions{ClientCAFile: filepath.Join(t.TempDir(), "nope.crt")}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, _, err := BuildAuth(tc.opts)
			if err == nil || tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("BuildAuth: %v, want an error (%v)", err, tc.is)
			}
		})
	}
}

func TestTLSConfigSelfSigned(t *testing.T) {
	dir := t.TempDir()
	opts := TLSOptions{CertDir: dir, Host: "node-1"}
	first, err := TLSConfig(opts)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(first.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.VerifyHostname("node-1"); err != nil {
		t.Errorf("self-signed certificate: %v", err)
	}
	if first.ClientAuth != tls.NoClientCert {
		t.Errorf("ClientAuth %v without a client CA, want none", first.ClientAuth)
	}
	// A restart serves the same certificate.
	second, err := TLSConfig(TLSOptions{CertDir: dir, Host: "node-1", RequestClientCert: true})
	if err != nil {
		t.Fatal(err)
	}
	if string(second.Certificates[0].Certificate[0]) != string(first.Certificates[0].Certificate[0]) {
		t.Error("a second start made a new certificate, want the one in the cert dir")
	}
	if second.ClientAuth != tls.RequestClientCert {
		t.Errorf("ClientAuth %v with a client CA, want RequestClientCert", second.ClientAuth)
	}
	for _, f := range []string{"kubelet.crt", "kubelet.key"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := TLSConfig(TLSOptions{CertFile: filepath.Join(dir, "kubelet.crt")}); err == nil {
		t.Error("a certificate without its key: no error")
	}
	given, err := TLSConfig(TLSOptions{CertFile: filepath.Join(dir, "kubelet.crt"), KeyFile: filepath.Join(dir, "kubelet.key"), CertDir: t.TempDir()})
	if err != nil || string(given.Certificates[0].Certificate[0]) != string(first.Certificates[0].Certificate[0]) {
		t.Errorf("given files: %v, want them served", err)
	}
}
