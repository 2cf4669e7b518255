package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// streamingRuntime answers Exec, Attach and PortForward with URLs of a
// plain HTTP server standing in for the runtime's streaming server.
type streamingRuntime struct {
	*testRuntime
	base string
}

func (r streamingRuntime) Exec(context.Context, *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return &runtimeapi.ExecResponse{Url: r.base + "/exec/rt"}, nil
}

func (r streamingRuntime) Attach(context.Context, *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return &runtimeapi.AttachResponse{Url: r.base + "/attach/rt"}, nil
}

func (r streamingRuntime) PortForward(context.Context, *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return &runtimeapi.PortForwardResponse{Url: r.base + "/portforward/rt"}, nil
}

func TestStreamingURLsAreTheGatewaysWhenFronting(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "runtime saw "+r.URL.Path)
	}))
	defer upstream.Close()
	rt := streamingRuntime{testRuntime: newTestRuntime(), base: upstream.URL}

	h := start(t, Config{StreamingAddr: "127.0.0.1:0"}, rt)
	gateway := "http://" + h.srv.StreamingAddr().String() + "/"
	ctx := context.Background()
	exec, err := h.runtime().Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"sh"}, Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	attach, err := h.runtime().Attach(ctx, &runtimeapi.AttachRequest{ContainerId: "c", Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	pf, err := h.runtime().PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: "p"})
	if err != nil {
		t.Fatal(err)
	}
	for kind, u := range map[string]string{"exec": exec.GetUrl(), "attach": attach.GetUrl(), "portforward": pf.GetUrl()} {
		if !strings.HasPrefix(u, gateway+kind+"/") {
			t.Errorf("%s URL %s, want one under %s%s/", kind, u, gateway, kind)
			continue
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := "runtime saw /" + kind + "/rt"; string(body) != want {
			t.Errorf("%s through the gateway: %q, want %q", kind, body, want)
		}
	}

	metrics := httptest.NewRecorder()
	h.srv.MetricsHandler().ServeHTTP(metrics, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if want := `splitlet_gateway_streams_total{kind="exec",result="proxied"} 1`; !strings.Contains(metrics.Body.String(), want) {
		t.Errorf("/metrics lacks %s", want)
	}

	addr := h.srv.StreamingAddr().String()
	if err := h.stop(t); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/exec/x"); err == nil {
		t.Errorf("the streaming proxy still answers after the gateway stopped")
	}
}

func TestStreamingURLsPassThroughWithoutFronting(t *testing.T) {
	rt := streamingRuntime{testRuntime: newTestRuntime(), base: "http://127.0.0.1:1"}
	h := start(t, Config{}, rt)
	resp, err := h.runtime().Exec(context.Background(), &runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"sh"}, Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetUrl() != "http://127.0.0.1:1/exec/rt" {
		t.Errorf("URL %s, want the runtime's unchanged", resp.GetUrl())
	}
	if h.srv.StreamingAddr() != nil {
		t.Errorf("a streaming listener without StreamingAddr")
	}
}
