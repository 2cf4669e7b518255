package lifecycle

import (
	"context"
	"errors"
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

	"github.com/splitlet/splitlet/services/sync/internal/prober/probe"
)

func TestRunExec(t *testing.T) {
	cmd := []string{"sh", "-c", "warm-up"}
	tests := []struct {
		desc    string
		execer  *scriptedExecer
		wantMsg string
		wantErr bool
	}{
		{desc: "exit 0: no message", execer: &scriptedExecer{stdout: "done"}},
		{desc: "non-zero exit: the kubelet's message with the output", execer: &scriptedExecer{stdout: "out ", stderr: "bad", code: 3},
			wantErr: true,
			wantMsg: `Exec lifecycle hook ([sh -c warm-up]) for Container "app" in Pod "web_ns(uid-1)" failed - error: command 'sh -c warm-up' exited with 3: bad, message: "out bad"`},
		{desc: "runtime error", execer: &scriptedExecer{err: errors.New("container not running")}, wantErr: true,
			wantMsg: `Exec lifecycle hook ([sh -c warm-up]) for Container "app" in Pod "web_ns(uid-1)" failed - error: container not running, message: ""`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			hr := NewHandlerRunner(Options{Execer: tc.execer})
			msg, err := hr.Run(context.Background(), testID, testPod(), &v1.Container{Name: "app"},
				&v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}})
			if (err != nil) != tc.wantErr || msg != tc.wantMsg {
				t.Fatalf("Run = (%q, %v), want (%q, error %v)", msg, err, tc.wantMsg, tc.wantErr)
			}
			if len(tc.execer.calls) != 1 || strings.Join(tc.execer.calls[0], " ") != "c1 sh -c warm-up" {
				t.Errorf("calls = %q", tc.execer.calls)
			}
		})
	}
}

func TestRunHTTP(t *testing.T) {
	type seen struct {
		path, ua, auth string
	}
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.RequestURI(), r.UserAgent(), r.Header.Get("Authorization")}
		w.WriteHeader(http.StatusInternalServerError) // not judged
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	_, portStr, _ := net.SplitHostPort(u.Host)
	port, _ := strconv.Atoi(portStr)
	closed := func() int {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}()
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "admin", ContainerPort: int32(port)}}}

	tests := []struct {
		desc      string
		action    v1.HTTPGetAction
		podStatus PodStatusProvider
		wantSeen  *seen
		wantMsg   string // prefix
		wantEvent string
	}{
		{desc: "pod IP from the runtime, port by name; a 500 is not a failure",
			action: v1.HTTPGetAction{Path: "/warm?x=1", Port: intstr.FromString("admin")}, podStatus: fakePodStatus{ips: []string{"127.0.0.1", "::1"}},
			wantSeen: &seen{path: "/warm?x=1", ua: "kube-lifecycle/" + probe.KubeVersion}},
		{desc: "explicit host needs no pod status",
			action:   v1.HTTPGetAction{Host: "127.0.0.1", Path: "/stop", Port: intstr.FromInt(port)},
			wantSeen: &seen{path: "/stop", ua: "kube-lifecycle/" + probe.KubeVersion}},
		{desc: "HTTPS answered in HTTP falls back to HTTP without Authorization",
			action: v1.HTTPGetAction{Host: "127.0.0.1", Scheme: v1.URISchemeHTTPS, Path: "/tls", Port: intstr.FromInt(port),
				HTTPHeaders: []v1.HTTPHeader{{Name: "Authorization", Value: "Bearer x"}}},
			wantSeen:  &seen{path: "/tls", ua: "kube-lifecycle/" + probe.KubeVersion},
			wantEvent: "Warning LifecycleHTTPFallback: request to HTTPS lifecycle hook 127.0.0.1:" + portStr + " got HTTP response, retry with HTTP succeeded"},
		{desc: "connection refused fails with the kubelet's message",
			action:  v1.HTTPGetAction{Host: "127.0.0.1", Path: "/stop", Port: intstr.FromInt(closed)},
			wantMsg: `HTTP lifecycle hook (/stop) for Container "app" in Pod "web_ns(uid-1)" failed - error: Get "http://127.0.0.1:` + strconv.Itoa(closed) + `/stop": dial tcp 127.0.0.1:` + strconv.Itoa(closed) + `: connect: connection refused`},
		{desc: "no pod IP fails",
			action: v1.HTTPGetAction{Path: "/stop", Port: intstr.FromInt(port)}, podStatus: fakePodStatus{},
			wantMsg: `HTTP lifecycle hook (/stop) for Container "app" in Pod "web_ns(uid-1)" failed - error: failed to find networking container`},
		{desc: "an unknown port name fails",
			action:  v1.HTTPGetAction{Host: "127.0.0.1", Path: "/stop", Port: intstr.FromString("nope")},
			wantMsg: `HTTP lifecycle hook (/stop) for Container "app" in Pod "web_ns(uid-1)" failed - error: `},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			rec := &fakeRecorder{}
			hr := NewHandlerRunner(Options{PodStatus: tc.podStatus, Recorder: rec})
			msg, err := hr.Run(context.Background(), testID, testPod(), c, &v1.LifecycleHandler{HTTPGet: &tc.action})
			if tc.wantMsg == "" {
				if err != nil || msg != "" {
					t.Fatalf("Run = (%q, %v), want success", msg, err)
				}
			} else if err == nil || !strings.HasPrefix(msg, tc.wantMsg) {
				t.Fatalf("Run = (%q, %v), want an error and message prefix %q", msg, err, tc.wantMsg)
			}
			if tc.wantSeen != nil {
				select {
				case s := <-got:
					if s != *tc.wantSeen {
						t.Errorf("server saw %+v, want %+v", s, *tc.wantSeen)
					}
				default:
					t.Errorf("the server saw no request")
				}
			}
			if ev := rec.list(); tc.wantEvent != "" && (len(ev) != 1 || ev[0] != tc.wantEvent) {
				t.Errorf("events = %q, want [%q]", ev, tc.wantEvent)
			}
		})
	}
}

func TestRunSleep(t *testing.T) {
	const unit = 10 * time.Millisecond
	tests := []struct {
		desc     string
		seconds  int64
		cancelAt time.Duration // 0: never
		wantMsg  string
	}{
		{desc: "sleeps its time and succeeds", seconds: 3},
		{desc: "zero seconds returns at once", seconds: 0},
		{desc: "stops when the context ends", seconds: 100000, cancelAt: 20 * time.Millisecond,
			wantMsg: `Sleep lifecycle hook (100000) for Container "app" in Pod "web_ns(uid-1)" failed - error: container terminated before sleep hook finished`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelAt > 0 {
				time.AfterFunc(tc.cancelAt, cancel)
			}
			hr := NewHandlerRunner(Options{TimeUnit: unit})
			start := time.Now()
			msg, err := hr.Run(ctx, testID, testPod(), &v1.Container{Name: "app"}, &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: tc.seconds}})
			elapsed := time.Since(start)
			if msg != tc.wantMsg || (err != nil) != (tc.wantMsg != "") {
				t.Fatalf("Run = (%q, %v), want %q", msg, err, tc.wantMsg)
			}
			if tc.cancelAt == 0 && elapsed < time.Duration(tc.seconds)*unit {
				t.Errorf("returned after %v, before its %d units", elapsed, tc.seconds)
			}
			if tc.cancelAt > 0 && elapsed > 10*time.Second {
				t.Errorf("ignored the cancelled context for %v", elapsed)
			}
		})
	}
}

func TestRunInvalidHandler(t *testing.T) {
	msg, err := NewHandlerRunner(Options{}).Run(context.Background(), testID, testPod(), &v1.Container{Name: "app"}, &v1.LifecycleHandler{})
	if err == nil || !strings.HasPrefix(msg, "Cannot run handler: invalid handler: ") {
		t.Fatalf("Run = (%q, %v), want the invalid handler message", msg, err)
	}
}

// httpGet hooks over HTTPS do not verify the server's certificate, and
// follow redirects to the same host only, as the kubelet's lifecycle
// client does (e2e "Container Lifecycle Hook ... should execute poststart
// https hook properly").
func TestRunHTTPSInsecure(t *testing.T) {
	hits := make(chan string, 8)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- "elsewhere " + r.URL.Path
	}))
	defer elsewhere.Close()
	_, elsewherePort, _ := net.SplitHostPort(strings.TrimPrefix(elsewhere.URL, "http://"))
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.URL.Path
		switch r.URL.Path {
		case "/moved":
			http.Redirect(w, r, "/start", http.StatusFound)
		case "/away":
			// Another host name for the same machine: not followed.
			http.Redirect(w, r, "http://localhost:"+elsewherePort+"/start", http.StatusFound)
		}
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	port, _ := strconv.Atoi(portStr)

	for _, tc := range []struct {
		desc     string
		path     string
		wantHits []string
	}{
		{desc: "a self-signed certificate is accepted", path: "/start", wantHits: []string{"/start"}},
		{desc: "a redirect to the same host is followed", path: "/moved", wantHits: []string{"/moved", "/start"}},
		{desc: "a redirect to another host is not", path: "/away", wantHits: []string{"/away"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			hr := NewHandlerRunner(Options{})
			action := &v1.HTTPGetAction{Host: "127.0.0.1", Scheme: v1.URISchemeHTTPS, Path: tc.path, Port: intstr.FromInt(port)}
			if msg, err := hr.Run(context.Background(), testID, testPod(), &v1.Container{Name: "app"}, &v1.LifecycleHandler{HTTPGet: action}); err != nil {
				t.Fatalf("Run = (%q, %v), want success", msg, err)
			}
			var got []string
			for len(hits) > 0 {
				got = append(got, <-hits)
			}
			if strings.Join(got, ",") != strings.Join(tc.wantHits, ",") {
				t.Errorf("servers saw %q, want %q", got, tc.wantHits)
			}
		})
	}
}
