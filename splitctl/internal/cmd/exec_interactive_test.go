package cmd

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/splitctl/internal/podfake"
)

// streamingServer is a minimal CRI streaming endpoint speaking the
// remotecommand v4 protocol over SPDY: it upper-cases stdin onto stdout and
// reports exitCode on the error stream, as the kubelet's ServeExec would.
func streamingServer(t *testing.T, exitCode int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, err := httpstream.Handshake(req, w, []string{remotecommand.StreamProtocolV4Name}); err != nil {
			return
		}
		type created struct {
			s     httpstream.Stream
			reply <-chan struct{}
		}
		newStreams := make(chan created, 8)
		conn := spdy.NewResponseUpgrader().UpgradeResponse(w, req, func(s httpstream.Stream, reply <-chan struct{}) error {
			newStreams <- created{s, reply}
			return nil
		})
		if conn == nil {
			return
		}
		defer conn.Close()
		streams := map[string]httpstream.Stream{}
		timeout := time.After(5 * time.Second)
		// The client opens error, stdin and stdout, then stderr (no TTY) or
		// resize (TTY); stdout and error are what this server needs.
		for streams["error"] == nil || streams["stdout"] == nil || streams["stdin"] == nil ||
			(streams["stderr"] == nil && streams["resize"] == nil) {
			select {
			case c := <-newStreams:
				<-c.reply
				streams[c.s.Headers().Get("streamType")] = c.s
			case <-timeout:
				t.Errorf("streams opened: %v", streams)
				return
			}
		}
		in, _ := io.ReadAll(streams["stdin"])
		streams["stdout"].Write(bytes.ToUpper(in))
		streams["stdout"].Close()
		status := metav1.Status{Status: metav1.StatusSuccess}
		if exitCode != 0 {
			status = metav1.Status{Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason,
				Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: strconv.Itoa(exitCode)}}}}
		}
		b, _ := json.Marshal(status)
		streams["error"].Write(b)
		streams["error"].Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestInteractiveExec(t *testing.T) {
	tests := []struct {
		desc     string
		args     []string
		exitCode int
		wantReq  *podv1.ExecRequest
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{
			desc:    "-i streams stdin and stdout",
			args:    []string{"exec", "-i", "web", "-c", "c1", "--", "tr", "a-z", "A-Z"},
			wantReq: &podv1.ExecRequest{Namespace: "default", Name: "web", Container: "c1", Command: []string{"tr", "a-z", "A-Z"}, Stdin: true},
			wantOut: "HELLO\n",
		},
		{
			desc:     "the remote exit code ends splitctl",
			args:     []string{"exec", "-i", "web", "--", "sh"},
			exitCode: 7,
			wantReq:  &podv1.ExecRequest{Namespace: "default", Name: "web", Command: []string{"sh"}, Stdin: true},
			wantCode: 7,
			wantOut:  "HELLO\n",
			wantErr:  "command terminated with exit code 7",
		},
		{
			desc:    "-it without a terminal runs without a TTY and says so, as kubectl",
			args:    []string{"exec", "-it", "web", "--", "sh"},
			wantReq: &podv1.ExecRequest{Namespace: "default", Name: "web", Command: []string{"sh"}, Stdin: true, Tty: false},
			wantOut: "HELLO\n",
			wantErr: "Unable to use a TTY - input is not a terminal",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			h.fake.SetPod(samplePod("default", "web"))
			h.fake.ExecURL = streamingServer(t, tc.exitCode).URL + "/exec/token"
			r := h.run("hello\n", tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.wantCode, r.stderr)
			}
			if r.stdout != tc.wantOut {
				t.Errorf("stdout %q, want %q", r.stdout, tc.wantOut)
			}
			if tc.wantErr != "" && !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q, want %q", r.stderr, tc.wantErr)
			}
			if got := podfake.LastRequest[*podv1.ExecRequest](h.fake); !proto.Equal(got, tc.wantReq) {
				t.Errorf("ExecRequest = %v, want %v", got, tc.wantReq)
			}
		})
	}
}

func TestInteractiveExecWithoutStreaming(t *testing.T) {
	h := newHarness(t)
	h.fake.SetPod(samplePod("default", "web"))
	// No ExecURL: the fake answers Unimplemented, as a server without
	// streaming would.
	r := h.run("", "exec", "-it", "web", "--", "sh")
	if r.code != 1 || !strings.Contains(r.stderr, "Error from server (MethodNotAllowed)") {
		t.Errorf("exit %d stderr %q", r.code, r.stderr)
	}
}
