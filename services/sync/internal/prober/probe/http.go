package probe

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxRespBodyLength is how much of a response body an HTTP probe reads
// (the kubelet's 10 KiB).
const maxRespBodyLength = 10 * 1 << 10

// NewHTTPGetRequest builds the GET request of an httpGet probe or hook.
// Matches the kubelet's httpprobe.NewRequestForHTTPGetAction: scheme
// lower-cased (default http), host from the action or else podIP, the port
// resolved by name or number, the path parsed so a query string survives,
// the action's headers, User-Agent "kube-<purpose>/<version>" and Accept
// "*/*" unless set (an empty Accept removes the header), and a Host header
// becomes the request's host.
func NewHTTPGetRequest(action *v1.HTTPGetAction, c *v1.Container, podIP, purpose string) (*http.Request, error) {
	scheme := strings.ToLower(string(action.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := action.Host
	if host == "" {
		host = podIP
	}
	port, err := ResolveContainerPort(action.Port, c)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(action.Path)
	if err != nil {
		u = &url.URL{Path: action.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))

	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	headers := make(http.Header)
	for _, h := range action.HTTPHeaders {
		headers.Add(h.Name, h.Value)
	}
	if _, ok := headers["User-Agent"]; !ok {
		headers.Set("User-Agent", UserAgent(purpose))
	}
	if _, ok := headers["Accept"]; !ok {
		headers.Set("Accept", "*/*")
	} else if headers.Get("Accept") == "" {
		headers.Del("Accept")
	}
	req.Header = headers
	req.Host = headers.Get("Host")
	return req, nil
}

// NewTransport is the kubelet's probe transport (httpprobe.New): TLS
// without verification (a probe checks liveness, not identity), no
// keep-alives (each probe is a fresh connection), no proxy, no
// compression, and the resetting dialer.
func NewTransport() *http.Transport {
	return &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify certificates, as the kubelet's
		DisableKeepAlives:  true,
		Proxy:              http.ProxyURL(nil),
		DisableCompression: true,
		DialContext:        Dialer(0).DialContext,
	}
}

// RedirectChecker follows redirects to the same host only, at most ten,
// as the kubelet's httpprobe.RedirectChecker with followNonLocalRedirects
// false: a redirect elsewhere ends the probe (or hook) with the 3xx
// response itself.
func RedirectChecker(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// HTTP performs an HTTP probe. Matches the kubelet's
// httpprobe.DoHTTPProbe: any transport error (timeouts included) is a
// failure carrying the error text; 200-299 succeeds with the body; 300-399
// (a redirect that was not followed) is a warning; anything else fails
// with "HTTP probe failed with statuscode: N" (never the body, which may
// hold secrets).
func HTTP(req *http.Request, transport http.RoundTripper, timeout time.Duration) (Result, string, error) {
	client := &http.Client{Timeout: timeout, Transport: transport, CheckRedirect: RedirectChecker}
	res, err := client.Do(req)
	if err != nil {
		return Failure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxRespBodyLength))
	if err != nil {
		return Failure, "", err
	}
	body := string(b)
	if res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest {
		if res.StatusCode >= http.StatusMultipleChoices {
			return Warning, fmt.Sprintf("Probe terminated redirects, Response body: %v", body), nil
		}
		return Success, body, nil
	}
	return Failure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
}
