package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestTransportWindows checks the gateway announces fixed flow-control
// windows to its clients, which is how grpc-go turns its BDP estimator (a PING
// after almost every small request) off.
func TestTransportWindows(t *testing.T) {
	h := start(t, Config{}, newTestRuntime())
	c, err := net.Dial("unix", h.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}

	var streamWindow, connIncrement uint32
	gotSettings := false
	for range 8 {
		f, err := fr.ReadFrame()
		if err != nil {
			// The server sends its connection WINDOW_UPDATE right after its
			// SETTINGS or not at all; a quiet second after SETTINGS means none.
			if gotSettings {
				break
			}
			t.Fatalf("reading the server's handshake: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			gotSettings = true
			c.SetReadDeadline(time.Now().Add(time.Second))
			if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
				streamWindow = v
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				connIncrement = f.Increment
			}
		}
		if gotSettings && connIncrement != 0 {
			break
		}
	}
	if streamWindow != StreamWindowSize {
		t.Errorf("SETTINGS_INITIAL_WINDOW_SIZE = %d, want %d", streamWindow, StreamWindowSize)
	}
	// The connection window starts at HTTP/2's 65535 and is raised by the
	// first WINDOW_UPDATE.
	if w := connIncrement + 65535; w != ConnWindowSize {
		t.Errorf("connection window = %d, want %d", w, ConnWindowSize)
	}
}

// TestMethodIndex checks every served method is described once in New, with
// the label, the CRI flag and a logger, so the observe interceptors do no
// per-call work for them.
func TestMethodIndex(t *testing.T) {
	h := start(t, Config{}, newTestRuntime())
	tests := []struct {
		desc       string
		fullMethod string
		op         string
		cri        bool
	}{
		{desc: "runtime service", fullMethod: "/runtime.v1.RuntimeService/RunPodSandbox", op: "RunPodSandbox", cri: true},
		{desc: "image service", fullMethod: "/runtime.v1.ImageService/PullImage", op: "PullImage", cri: true},
		{desc: "stream", fullMethod: "/runtime.v1.RuntimeService/GetContainerEvents", op: "GetContainerEvents", cri: true},
		{desc: "health is not a runtime operation", fullMethod: "/grpc.health.v1.Health/Check", op: "Check", cri: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			m, ok := h.srv.methods[tc.fullMethod]
			if !ok {
				t.Fatalf("%s is not in the method index", tc.fullMethod)
			}
			if m.op != tc.op || m.cri != tc.cri || m.log == nil {
				t.Errorf("method = {op %q, cri %v, log %v}, want {op %q, cri %v, a logger}", m.op, m.cri, m.log, tc.op, tc.cri)
			}
			if h.srv.method(tc.fullMethod) != m {
				t.Error("method() built a new description for an indexed method")
			}
		})
	}
	if m := h.srv.method("/runtime.v1.RuntimeService/NotServed"); m.op != "NotServed" || !m.cri {
		t.Errorf("unindexed method = {op %q, cri %v}, want {op NotServed, cri true}", m.op, m.cri)
	}
}

// TestMetricsLazy checks the per-method collector cache keeps /metrics as it
// was: only methods that were called have series, and a method's successes
// and failures both count once per call.
func TestMetricsLazy(t *testing.T) {
	h := start(t, Config{}, newTestRuntime())
	client := h.runtime()
	ctx := context.Background()
	for range 3 {
		if _, err := client.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	client.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "missing"})
	if _, err := healthpb.NewHealthClient(h.conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}

	rec := httptest.NewRecorder()
	h.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`splitlet_gateway_runtime_operations_total{code="OK",operation_type="Version"} 3`,
		`splitlet_gateway_runtime_operations_duration_seconds_count{operation_type="Version"} 3`,
		`splitlet_gateway_runtime_operations_total{code="NotFound",operation_type="ContainerStatus"} 1`,
		`splitlet_gateway_runtime_operations_duration_seconds_count{operation_type="ContainerStatus"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, never := range []string{"ListContainers", "RunPodSandbox", "PullImage", "Check"} {
		if strings.Contains(body, `operation_type="`+never+`"`) {
			t.Errorf("metrics have a series for %s, which was never called as a runtime operation", never)
		}
	}
	if strings.Contains(body, `code="OK",operation_type="ContainerStatus"`) {
		t.Error("a failed ContainerStatus was counted as OK")
	}
}
