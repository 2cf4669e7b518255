package streamproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// echoRuntime is a streaming server that upgrades any request asking for
// "echo" and then echoes bytes, recording the request it got.
type echoRuntime struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func newEchoRuntime(t *testing.T) *echoRuntime {
	e := &echoRuntime{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.seen = append(e.seen, r)
		e.mu.Unlock()
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "upgrade required", http.StatusBadRequest)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
		io.Copy(conn, brw)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *echoRuntime) requests() []*http.Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*http.Request(nil), e.seen...)
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type harness struct {
	proxy *Proxy
	clock *clock
	reg   *prometheus.Registry
	stop  context.CancelFunc
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{clock: &clock{now: time.Unix(1_700_000_000, 0)}, reg: prometheus.NewRegistry(), stop: cancel}
	opts.Listener, opts.BaseContext, opts.Registerer, opts.Now = ln, ctx, h.reg, h.clock.Now
	h.proxy, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.proxy.Serve() }()
	t.Cleanup(func() {
		cancel()
		if err := h.proxy.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return h
}

// upgrade asks rawURL for an "echo" upgrade and returns the connection
// after the response, or the response when it is not 101.
func upgrade(t *testing.T, rawURL string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req, _ := http.NewRequest(http.MethodPost, rawURL, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	req.Header.Set("X-Stream-Protocol-Version", "v4.channel.k8s.io")
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	return conn, br, resp
}

func roundTrip(t *testing.T, conn net.Conn, br *bufio.Reader, msg string) {
	t.Helper()
	if _, err := conn.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(br, got); err != nil {
		t.Fatalf("read back %q: %v", msg, err)
	}
	if string(got) != msg {
		t.Fatalf("echoed %q, want %q", got, msg)
	}
}

func TestFrontedURLProxiesOneUpgradedStream(t *testing.T) {
	rt := newEchoRuntime(t)
	h := newHarness(t, Options{})
	ended := make(chan struct{}, 1)
	h.proxy.ended = func() { ended <- struct{}{} }
	front, err := h.proxy.Front(Exec, rt.URL+"/exec/runtime-token")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(front)
	if want := h.proxy.opts.Listener.Addr().String(); u.Host != want || !strings.HasPrefix(u.Path, "/exec/") {
		t.Fatalf("fronted URL %s, want http://%s/exec/<token>", front, want)
	}
	if strings.Contains(front, "runtime-token") {
		t.Fatalf("fronted URL %s shows the runtime's token", front)
	}

	conn, br, resp := upgrade(t, front+"?ports=8080")
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	roundTrip(t, conn, br, "ping")
	roundTrip(t, conn, br, strings.Repeat("x", 64<<10))

	reqs := rt.requests()
	if len(reqs) != 1 {
		t.Fatalf("runtime saw %d requests, want 1", len(reqs))
	}
	got := reqs[0]
	if got.URL.Path != "/exec/runtime-token" || got.URL.RawQuery != "ports=8080" || got.Method != http.MethodPost ||
		got.Header.Get("X-Stream-Protocol-Version") != "v4.channel.k8s.io" {
		t.Errorf("runtime got %s %s?%s protocol %q; want POST /exec/runtime-token?ports=8080 with the client's protocol header",
			got.Method, got.URL.Path, got.URL.RawQuery, got.Header.Get("X-Stream-Protocol-Version"))
	}
	if n := testutil.ToFloat64(h.proxy.metrics.active.WithLabelValues("exec")); n != 1 {
		t.Errorf("streams_active{exec} = %v while the stream is open, want 1", n)
	}
	conn.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the proxy never ended the stream")
	}
	if testutil.ToFloat64(h.proxy.metrics.streams.WithLabelValues("exec", "proxied")) != 1 ||
		testutil.ToFloat64(h.proxy.metrics.active.WithLabelValues("exec")) != 0 {
		t.Errorf("after the stream: streams_total{exec,proxied} %v, streams_active{exec} %v; want 1 and 0",
			testutil.ToFloat64(h.proxy.metrics.streams.WithLabelValues("exec", "proxied")),
			testutil.ToFloat64(h.proxy.metrics.active.WithLabelValues("exec")))
	}
}

func TestURLWorksOnceForItsKindAndUntilItExpires(t *testing.T) {
	rt := newEchoRuntime(t)
	h := newHarness(t, Options{TTL: time.Minute})

	once, _ := h.proxy.Front(Attach, rt.URL+"/attach/a")
	if _, _, resp := upgrade(t, once); resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("first use: status %d, want 101", resp.StatusCode)
	}
	if _, _, resp := upgrade(t, once); resp.StatusCode != http.StatusNotFound {
		t.Errorf("second use: status %d, want 404", resp.StatusCode)
	}

	wrongKind, _ := h.proxy.Front(Attach, rt.URL+"/attach/b")
	if _, _, resp := upgrade(t, strings.Replace(wrongKind, "/attach/", "/exec/", 1)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an attach URL used as exec: status %d, want 404", resp.StatusCode)
	}

	expiring, _ := h.proxy.Front(PortForward, rt.URL+"/portforward/c")
	h.clock.advance(time.Minute)
	if _, _, resp := upgrade(t, expiring); resp.StatusCode != http.StatusNotFound {
		t.Errorf("after its TTL: status %d, want 404", resp.StatusCode)
	}
	if n := len(rt.requests()); n != 1 {
		t.Errorf("the runtime saw %d requests, want only the first use's", n)
	}
	if n := testutil.ToFloat64(h.proxy.metrics.streams.WithLabelValues("attach", "not_found")); n != 1 {
		t.Errorf("streams_total{attach,not_found} = %v, want 1 (the second use)", n)
	}
}

func TestOutstandingURLsAreBounded(t *testing.T) {
	rt := newEchoRuntime(t)
	h := newHarness(t, Options{MaxInFlight: 2})
	for i := range 2 {
		if _, err := h.proxy.Front(Exec, rt.URL+"/exec/x"); err != nil {
			t.Fatalf("URL %d: %v", i, err)
		}
	}
	_, err := h.proxy.Front(Exec, rt.URL+"/exec/x")
	if !errors.Is(err, errdefs.ErrResourceExhausted) {
		t.Fatalf("third URL: %v, want ResourceExhausted", err)
	}
	h.clock.advance(DefaultTTL)
	if _, err := h.proxy.Front(Exec, rt.URL+"/exec/x"); err != nil {
		t.Errorf("after the first two expired: %v", err)
	}
}

func TestUnreachableRuntimeIsBadGateway(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/exec/gone"
	ln.Close()
	h := newHarness(t, Options{})
	front, _ := h.proxy.Front(Exec, dead)
	if _, _, resp := upgrade(t, front); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
	if n := testutil.ToFloat64(h.proxy.metrics.streams.WithLabelValues("exec", "error")); n != 1 {
		t.Errorf("streams_total{exec,error} = %v, want 1", n)
	}
}

func TestShutdownEndsOpenStreams(t *testing.T) {
	rt := newEchoRuntime(t)
	h := newHarness(t, Options{})
	front, _ := h.proxy.Front(Exec, rt.URL+"/exec/x")
	conn, br, resp := upgrade(t, front)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d, want 101", resp.StatusCode)
	}
	roundTrip(t, conn, br, "before")
	h.stop() // the gateway's stream context ends
	if _, err := io.ReadAll(br); err != nil && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("read after shutdown: %v", err)
	}
}

func TestBadRuntimeURLAndBaseURL(t *testing.T) {
	h := newHarness(t, Options{})
	if _, err := h.proxy.Front(Exec, "/exec/no-host"); err == nil || !strings.Contains(err.Error(), "unusable exec URL") {
		t.Errorf("a URL without a host: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := New(Options{Listener: ln, BaseURL: "ftp://x"}); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Errorf("base URL ftp://x: %v, want InvalidArgument", err)
	}
	p, err := New(Options{Listener: ln, BaseURL: "http://127.0.0.1:10010"})
	if err != nil {
		t.Fatal(err)
	}
	front, _ := p.Front(PortForward, "http://127.0.0.1:1/portforward/x")
	if !strings.HasPrefix(front, "http://127.0.0.1:10010/portforward/") {
		t.Errorf("URL %s does not start with the base URL", front)
	}
}
