package probe

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestNewHTTPGetRequest(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	tests := []struct {
		desc       string
		action     v1.HTTPGetAction
		wantURL    string
		wantHeader http.Header
		wantHost   string
		wantErr    bool
	}{
		{desc: "defaults: http, pod IP, kube-probe user agent, accept all",
			action:     v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(80)},
			wantURL:    "http://10.1.2.3:80/healthz",
			wantHeader: http.Header{"User-Agent": {"kube-probe/" + KubeVersion}, "Accept": {"*/*"}}},
		{desc: "scheme lower-cased, explicit host, query kept, port by name",
			action:     v1.HTTPGetAction{Scheme: v1.URISchemeHTTPS, Host: "example.test", Path: "/h?x=1", Port: intstr.FromString("http")},
			wantURL:    "https://example.test:8080/h?x=1",
			wantHeader: http.Header{"User-Agent": {"kube-probe/" + KubeVersion}, "Accept": {"*/*"}}},
		{desc: "headers kept; user agent and accept overridable; Host header becomes the request host",
			action: v1.HTTPGetAction{Path: "/", Port: intstr.FromString("9000"), HTTPHeaders: []v1.HTTPHeader{
				{Name: "user-agent", Value: "mine"}, {Name: "X-Custom", Value: "a"}, {Name: "X-Custom", Value: "b"},
				{Name: "Accept", Value: "application/json"}, {Name: "Host", Value: "svc.local"}}},
			wantURL: "http://10.1.2.3:9000/",
			wantHeader: http.Header{"User-Agent": {"mine"}, "X-Custom": {"a", "b"}, "Accept": {"application/json"},
				"Host": {"svc.local"}},
			wantHost: "svc.local"},
		{desc: "an empty Accept removes the header",
			action:     v1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), HTTPHeaders: []v1.HTTPHeader{{Name: "Accept", Value: ""}}},
			wantURL:    "http://10.1.2.3:80/",
			wantHeader: http.Header{"User-Agent": {"kube-probe/" + KubeVersion}}},
		{desc: "an unknown port name is an error", action: v1.HTTPGetAction{Port: intstr.FromString("nope")}, wantErr: true},
		{desc: "port 0 is an error", action: v1.HTTPGetAction{Port: intstr.FromInt32(0)}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			req, err := NewHTTPGetRequest(&tc.action, c, "10.1.2.3", "probe")
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got request %v, want an error", req.URL)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != tc.wantURL {
				t.Errorf("URL = %q, want %q", req.URL, tc.wantURL)
			}
			if fmt.Sprint(req.Header) != fmt.Sprint(tc.wantHeader) {
				t.Errorf("headers = %v, want %v", req.Header, tc.wantHeader)
			}
			if req.Host != tc.wantHost {
				t.Errorf("Host = %q, want %q", req.Host, tc.wantHost)
			}
		})
	}
}

func TestResolveContainerPort(t *testing.T) {
	c := &v1.Container{Ports: []v1.ContainerPort{{Name: "web", ContainerPort: 8080}}}
	tests := []struct {
		desc    string
		port    intstr.IntOrString
		want    int
		wantErr bool
	}{
		{desc: "number", port: intstr.FromInt32(443), want: 443},
		{desc: "name", port: intstr.FromString("web"), want: 8080},
		{desc: "number as string", port: intstr.FromString("81"), want: 81},
		{desc: "unknown name", port: intstr.FromString("db"), wantErr: true},
		{desc: "out of range", port: intstr.FromInt32(70000), wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ResolveContainerPort(tc.port, c)
			if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
				t.Fatalf("ResolveContainerPort = (%d, %v), want %d (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestHTTP(t *testing.T) {
	mux := http.NewServeMux()
	var otherHost string // a redirect target on another host name
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "fine") })
	mux.HandleFunc("/status/", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		w.WriteHeader(code)
		fmt.Fprint(w, "secret body")
	})
	mux.HandleFunc("/redirect-local", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/redirect-away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+otherHost+"/ok", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	// Answers only once the prober has given up and gone.
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, strings.Repeat("b", 30000)) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	otherHost = net.JoinHostPort("localhost", port)

	tests := []struct {
		desc       string
		path       string
		timeout    time.Duration
		wantResult Result
		wantOutput string // prefix
	}{
		{desc: "200 succeeds with the body", path: "/ok", wantResult: Success, wantOutput: "fine"},
		{desc: "399 is still a success range code but a redirect: warning", path: "/status/399", wantResult: Warning,
			wantOutput: "Probe terminated redirects, Response body: secret body"},
		{desc: "204 succeeds", path: "/status/204", wantResult: Success},
		{desc: "a redirect on the same host is followed", path: "/redirect-local", wantResult: Success, wantOutput: "fine"},
		{desc: "a redirect to another host is not followed: warning", path: "/redirect-away", wantResult: Warning,
			wantOutput: "Probe terminated redirects, Response body: "},
		{desc: "a redirect loop fails after 10", path: "/loop", wantResult: Failure, wantOutput: `Get "/loop": stopped after 10 redirects`},
		{desc: "404 fails without the body", path: "/status/404", wantResult: Failure, wantOutput: "HTTP probe failed with statuscode: 404"},
		{desc: "500 fails", path: "/status/500", wantResult: Failure, wantOutput: "HTTP probe failed with statuscode: 500"},
		{desc: "400 fails", path: "/status/400", wantResult: Failure, wantOutput: "HTTP probe failed with statuscode: 400"},
		{desc: "a slow server fails at the timeout", path: "/slow", timeout: 50 * time.Millisecond, wantResult: Failure,
			wantOutput: `Get "` + srv.URL + `/slow": context deadline exceeded (Client.Timeout exceeded`},
		{desc: "the body is cut at 10 KiB", path: "/big", wantResult: Success, wantOutput: strings.Repeat("b", 10240)},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 2 * time.Second
			}
			req, err := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, out, err := HTTP(req, NewTransport(), timeout)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if res != tc.wantResult || !strings.HasPrefix(out, tc.wantOutput) {
				t.Fatalf("HTTP = (%q, %.80q), want (%q, prefix %.80q)", res, out, tc.wantResult, tc.wantOutput)
			}
			if tc.path == "/big" && len(out) != 10240 {
				t.Errorf("body length = %d, want 10240", len(out))
			}
		})
	}
}

// TestHTTPSendsHeaders checks what reaches the server: the probe's headers,
// the kube-probe user agent and no keep-alive.
func TestHTTPSendsHeaders(t *testing.T) {
	got := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	p, _ := strconv.Atoi(port)
	action := &v1.HTTPGetAction{Path: "/x", Port: intstr.FromInt(p), HTTPHeaders: []v1.HTTPHeader{{Name: "X-Token", Value: "t"}, {Name: "Host", Value: "virtual.test"}}}
	req, err := NewHTTPGetRequest(action, &v1.Container{}, host, "probe")
	if err != nil {
		t.Fatal(err)
	}
	if res, out, _ := HTTP(req, NewTransport(), time.Second); res != Success {
		t.Fatalf("result = %q (%s), want success", res, out)
	}
	r := <-got
	if r.Header.Get("X-Token") != "t" || r.UserAgent() != "kube-probe/"+KubeVersion || r.Host != "virtual.test" || r.Header.Get("Accept") != "*/*" {
		t.Errorf("server saw headers %v host %q", r.Header, r.Host)
	}
	if !r.Close {
		t.Errorf("request asked for keep-alive; probes use a fresh connection each time")
	}
}
