package apiauth

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"connectrpc.com/connect"
)

// AddFlags registers l's flags on fs with l's current values as defaults;
// what is the listener's (the service, /healthz, /metrics) is the caller's
// to say in listenUsage.
func (l *Listen) AddFlags(fs *flag.FlagSet, listenUsage string) {
	fs.StringVar(&l.Address, "listen", l.Address, listenUsage+"; unix:///path (mode 0660) or host:port, which needs --listen-token-file or --listen-client-ca-file")
	fs.StringVar(&l.TokenFile, "listen-token-file", l.TokenFile, "file of bearer tokens (one per line) a caller must send as 'Authorization: Bearer TOKEN'; required on a unix socket too when set")
	fs.StringVar(&l.TLSCertFile, "listen-tls-cert-file", l.TLSCertFile, "PEM serving certificate of a TCP --listen (TLS, HTTP/2 and HTTP/1.1)")
	fs.StringVar(&l.TLSKeyFile, "listen-tls-private-key-file", l.TLSKeyFile, "PEM private key of --listen-tls-cert-file")
	fs.StringVar(&l.ClientCAFile, "listen-client-ca-file", l.ClientCAFile, "PEM CA bundle; a client certificate it signed authenticates a caller (mutual TLS)")
}

// Authenticator returns a wrapper of the service's handler that lets
// only an authenticated caller reach it: one with a verified client
// certificate, with a token of TokenFile, or — on a unix socket without a
// token file — any caller the socket's permissions let in. The tokens are
// read here, once: a missing file stops the process before it serves.
func (l Listen) Authenticator() (func(http.Handler) http.Handler, error) {
	var tokens [][]byte
	if l.TokenFile != "" {
		var err error
		if tokens, err = readTokens(l.TokenFile); err != nil {
			return nil, err
		}
	}
	trustPeer := l.SocketPath() != "" && len(tokens) == 0
	errWriter := connect.NewErrorWriter()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if trustPeer || verifiedClient(r) || tokenMatches(r, tokens) {
				next.ServeHTTP(w, r)
				return
			}
			err := connect.NewError(connect.CodeUnauthenticated, errors.New(unauthenticatedMessage(r, tokens)))
			if errWriter.IsSupported(r) {
				_ = errWriter.Write(w, r, err)
				return
			}
			http.Error(w, err.Error(), http.StatusUnauthorized)
		})
	}, nil
}

func unauthenticatedMessage(r *http.Request, tokens [][]byte) string {
	switch {
	case r.Header.Get("Authorization") != "":
		return "the bearer token is not one this server accepts"
	case len(tokens) > 0:
		return "no credential: send 'Authorization: Bearer TOKEN' or a client certificate"
	default:
		return "no credential: send a client certificate this server's CA signed"
	}
}

// verifiedClient is a TLS request whose client certificate verified
// against the listener's client CA (tls.VerifyClientCertIfGiven).
func verifiedClient(r *http.Request) bool {
	return r.TLS != nil && len(r.TLS.VerifiedChains) > 0
}

// tokenMatches compares the request's bearer token with each accepted one
// in constant time.
func tokenMatches(r *http.Request, tokens [][]byte) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return false
	}
	match := 0
	for _, t := range tokens {
		match |= subtle.ConstantTimeCompare([]byte(got), t)
	}
	return match == 1
}

// readTokens reads one token per line, blank lines and surrounding spaces
// ignored; a file without any is an error, not a server nobody can call.
func readTokens(file string) ([][]byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--listen-token-file: %w", err)
	}
	var tokens [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if t := bytes.TrimSpace(sc.Bytes()); len(t) > 0 {
			tokens = append(tokens, bytes.Clone(t))
		}
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("--listen-token-file: %s holds no token", file)
	}
	return tokens, nil
}
