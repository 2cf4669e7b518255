package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// podServer answers Get, Apply and ExecSync, and Delete with NotFound.
type podServer struct {
	podv1connect.UnimplementedPodServiceHandler
}

func (podServer) Get(context.Context, *connect.Request[podv1.GetRequest]) (*connect.Response[podv1.GetResponse], error) {
	return connect.NewResponse(&podv1.GetResponse{}), nil
}

func (podServer) Apply(context.Context, *connect.Request[podv1.ApplyRequest]) (*connect.Response[podv1.ApplyResponse], error) {
	return connect.NewResponse(&podv1.ApplyResponse{}), nil
}

func (podServer) ExecSync(context.Context, *connect.Request[podv1.ExecSyncRequest]) (*connect.Response[podv1.ExecSyncResponse], error) {
	return connect.NewResponse(&podv1.ExecSyncResponse{}), nil
}

func (podServer) Delete(context.Context, *connect.Request[podv1.DeleteRequest]) (*connect.Response[podv1.DeleteResponse], error) {
	return nil, connect.NewError(connect.CodeNotFound, errors.New("gone"))
}

// flakyTransport fails its first calls as a server that is away does, then
// passes calls on.
type flakyTransport struct {
	mu    sync.Mutex
	fails []error // one per call, in order
	calls int
	next  http.RoundTripper
}

func (f *flakyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.calls++
	var err error
	if len(f.fails) > 0 {
		err, f.fails = f.fails[0], f.fails[1:]
	}
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.next.RoundTrip(req)
}

func TestRetryWhileTheServerIsAway(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle(podv1connect.NewPodServiceHandler(podServer{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		desc      string
		fails     []error
		timeout   time.Duration
		call      func(podv1connect.PodServiceClient) error
		wantErr   bool
		wantCalls int
	}{
		{desc: "refused until the server is up: retried", fails: []error{refused, refused}, timeout: time.Minute,
			call: get, wantCalls: 3},
		{desc: "connection reset during an Apply: retried (idempotent)", fails: []error{reset}, timeout: time.Minute,
			call: apply, wantCalls: 2},
		{desc: "connection reset during an ExecSync: not retried (would run twice)", fails: []error{reset}, timeout: time.Minute,
			call: execSync, wantErr: true, wantCalls: 1},
		{desc: "refused before an ExecSync: retried (never reached the server)", fails: []error{refused}, timeout: time.Minute,
			call: execSync, wantCalls: 2},
		{desc: "a Delete whose first try was lost finds the pod gone: deleted", fails: []error{reset}, timeout: time.Minute,
			call: deletePod, wantCalls: 2},
		{desc: "a Delete of a pod that never existed: NotFound", timeout: time.Minute,
			call: deletePod, wantErr: true, wantCalls: 1},
		{desc: "--retry-timeout=0: no retry", fails: []error{refused}, call: get, wantErr: true, wantCalls: 1},
		{desc: "away longer than the timeout: the connection error", fails: []error{refused, refused, refused, refused, refused},
			timeout: 350 * time.Millisecond, call: get, wantErr: true, wantCalls: 3},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			tr := &flakyTransport{fails: tc.fails, next: http.DefaultTransport}
			c := podv1connect.NewPodServiceClient(&http.Client{Transport: tr}, srv.URL,
				connect.WithInterceptors(&errorInterceptor{server: srv.URL},
					// No real waiting: the back-off's delays still count
					// against the timeout.
					&retryInterceptor{timeout: tc.timeout, sleep: func(context.Context, time.Duration) error { return nil }}))
			err := tc.call(c)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if tr.calls != tc.wantCalls {
				t.Errorf("%d calls, want %d", tr.calls, tc.wantCalls)
			}
			var ce *ConnectionError
			if tc.wantErr && len(tc.fails) > 0 && tc.fails[0] == refused && !errors.As(err, &ce) {
				t.Errorf("error %v, want the ConnectionError kubectl prints", err)
			}
		})
	}
}

func get(c podv1connect.PodServiceClient) error {
	_, err := c.Get(context.Background(), connect.NewRequest(&podv1.GetRequest{Namespace: "default", Name: "web"}))
	return err
}

func apply(c podv1connect.PodServiceClient) error {
	_, err := c.Apply(context.Background(), connect.NewRequest(&podv1.ApplyRequest{Manifest: "x"}))
	return err
}

func execSync(c podv1connect.PodServiceClient) error {
	_, err := c.ExecSync(context.Background(), connect.NewRequest(&podv1.ExecSyncRequest{}))
	return err
}

func deletePod(c podv1connect.PodServiceClient) error {
	_, err := c.Delete(context.Background(), connect.NewRequest(&podv1.DeleteRequest{Namespace: "default", Name: "web"}))
	return err
}
