package cmd

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"
)

func TestErrorMessagesAndExitCodes(t *testing.T) {
	tests := []struct {
		desc     string
		procErr  map[string]error
		args     []string
		wantCode int
		wantErr  string
	}{
		{desc: "success exits 0", args: []string{"get", "pods"}, wantCode: 0},
		{desc: "NotFound names the pod as the API server would", procErr: map[string]error{"Get": connect.NewError(connect.CodeNotFound, errors.New("pod default/web not found"))},
			args: []string{"get", "pod", "web"}, wantCode: 1, wantErr: `Error from server (NotFound): pods "web" not found`},
		{desc: "AlreadyExists", procErr: map[string]error{"Apply": connect.NewError(connect.CodeAlreadyExists, errors.New(`pods "web" already exists`))},
			args: []string{"apply", "-f", "-"}, wantCode: 1, wantErr: `Error from server (AlreadyExists): pods "web" already exists`},
		{desc: "InvalidArgument is BadRequest with the server's message", procErr: map[string]error{"List": connect.NewError(connect.CodeInvalidArgument, errors.New("unable to parse requirement"))},
			args: []string{"get", "pods", "-l", "a=(b"}, wantCode: 1, wantErr: "Error from server (BadRequest): unable to parse requirement"},
		{desc: "PermissionDenied is Forbidden", procErr: map[string]error{"Delete": connect.NewError(connect.CodePermissionDenied, errors.New("static pods cannot be deleted through the API"))},
			args: []string{"delete", "pod", "web"}, wantCode: 1, wantErr: "Error from server (Forbidden): static pods cannot be deleted through the API"},
		{desc: "FailedPrecondition is Conflict", procErr: map[string]error{"ExecSync": connect.NewError(connect.CodeFailedPrecondition, errors.New("container is not running"))},
			args: []string{"exec", "web", "--", "true"}, wantCode: 1, wantErr: "Error from server (Conflict): container is not running"},
		{desc: "Unavailable is ServiceUnavailable", procErr: map[string]error{"List": connect.NewError(connect.CodeUnavailable, errors.New("runtime not ready"))},
			args: []string{"get", "pods"}, wantCode: 1, wantErr: "Error from server (ServiceUnavailable): runtime not ready"},
		{desc: "Internal is InternalError", procErr: map[string]error{"List": connect.NewError(connect.CodeInternal, errors.New("boom"))},
			args: []string{"get", "pods"}, wantCode: 1, wantErr: "Error from server (InternalError): boom"},
		{desc: "Unimplemented is MethodNotAllowed", procErr: map[string]error{"Events": connect.NewError(connect.CodeUnimplemented, errors.New("not yet"))},
			args: []string{"events"}, wantCode: 1, wantErr: "Error from server (MethodNotAllowed): not yet"},
		{desc: "a streaming error is mapped too", procErr: map[string]error{"Logs": connect.NewError(connect.CodeNotFound, errors.New("x"))},
			args: []string{"logs", "web"}, wantCode: 1, wantErr: `Error from server (NotFound): pods "web" not found`},
		{desc: "unknown command", args: []string{"frobnicate"}, wantCode: 1, wantErr: `error: unknown command "frobnicate" for "splitctl"`},
		{desc: "unknown flag", args: []string{"get", "pods", "--bogus"}, wantCode: 1, wantErr: "error: unknown flag: --bogus"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			h.fake.SetPod(samplePod("default", "web"))
			for k, v := range tc.procErr {
				h.fake.Err[k] = v
			}
			r := h.run(podYAML("web"), tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d (stderr %q)", r.code, tc.wantCode, r.stderr)
			}
			if tc.wantErr != "" && strings.TrimSpace(r.stderr) != tc.wantErr {
				t.Errorf("stderr %q, want %q", r.stderr, tc.wantErr)
			}
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	// A port that was just free: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	h := newHarness(t)
	r := h.run("", "--server", "http://"+addr, "get", "pods")
	want := "The connection to the server " + addr + " was refused - did you specify the right host or port?"
	if r.code != 1 || strings.TrimSpace(r.stderr) != want {
		t.Errorf("exit %d stderr %q, want 1 and %q", r.code, r.stderr, want)
	}
}

func TestServerFlagBeatsEnvironment(t *testing.T) {
	h := newHarness(t)
	h.fake.SetPod(samplePod("default", "web"))
	good := h.env["SPLITLET_SERVER"]
	h.env["SPLITLET_SERVER"] = "http://127.0.0.1:1" // nothing listens on port 1
	if r := h.run("", "get", "pods"); r.code != 1 || !strings.Contains(r.stderr, "127.0.0.1:1 was refused") {
		t.Fatalf("with only the bad env: exit %d stderr %q", r.code, r.stderr)
	}
	if r := h.run("", "--server", good, "get", "pods"); r.code != 0 || !strings.Contains(r.stdout, "web") {
		t.Errorf("--server did not win over %s: exit %d stderr %q", "SPLITLET_SERVER", r.code, r.stderr)
	}
}

func TestServerFromConfigFileUnderHome(t *testing.T) {
	h := newHarness(t)
	h.fake.SetPod(samplePod("default", "web"))
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".config", "splitlet"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "server: " + h.env["SPLITLET_SERVER"] + "\n"
	if err := os.WriteFile(filepath.Join(home, ".config", "splitlet", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h.env = map[string]string{"HOME": home}
	if r := h.run("", "get", "pods"); r.code != 0 || !strings.Contains(r.stdout, "web") {
		t.Errorf("config under HOME not used: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}
