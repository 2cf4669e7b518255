package cri

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend/passthrough"
)

// upstream is a tiny CRI runtime standing in for containerd: known replies,
// known errors, and an event stream whose end the test controls.
type upstream struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	events       int           // events GetContainerEvents sends first
	endStream    bool          // then return (EOF to the client) instead of waiting
	streamClosed chan struct{} // closed when GetContainerEvents sees its context end
	bigPayload   int           // bytes of label data in ListContainers
}

func (u *upstream) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "upstream", RuntimeVersion: "9.9.9", RuntimeApiVersion: "v1"}, nil
}

func (u *upstream) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	return nil, status.Errorf(codes.NotFound, "an error occurred when try to find container %q: not found", req.GetContainerId())
}

func (u *upstream) StartContainer(context.Context, *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	return nil, status.Error(codes.FailedPrecondition, "container is in CONTAINER_EXITED state")
}

func (u *upstream) PullImage(context.Context, *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	return nil, status.Error(codes.Unknown, "failed to pull and unpack image: not found")
}

func (u *upstream) Exec(_ context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return &runtimeapi.ExecResponse{Url: "http://127.0.0.1:10010/exec/" + req.GetContainerId() + "-token"}, nil
}

func (u *upstream) ListContainers(context.Context, *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{{
		Id:     "c1",
		Labels: map[string]string{"big": strings.Repeat("x", u.bigPayload)},
	}}}, nil
}

func (u *upstream) GetContainerEvents(_ *runtimeapi.GetEventsRequest, srv grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	for i := range u.events {
		if err := srv.Send(&runtimeapi.ContainerEventResponse{
			ContainerId:        "c" + string(rune('0'+i)),
			ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
			CreatedAt:          int64(i + 1),
		}); err != nil {
			return err
		}
	}
	if u.endStream {
		return nil
	}
	<-srv.Context().Done()
	close(u.streamClosed)
	return srv.Context().Err()
}

// serve serves the registrations on a fresh unix socket and returns its path.
func serve(t *testing.T, dir, name string, register func(*grpc.Server)) string {
	t.Helper()
	path := filepath.Join(dir, name)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.MaxSendMsgSize(maxMsgSize), grpc.MaxRecvMsgSize(maxMsgSize))
	register(gs)
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)
	return path
}

// setup runs upstream, the cri backend in front of it behind a plain gRPC
// server, and returns a client of that server: the same path as through the
// gateway, without the gateway's interceptors.
func setup(t *testing.T, up *upstream) runtimeapi.RuntimeServiceClient {
	t.Helper()
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	upPath := serve(t, dir, "up.sock", func(gs *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(gs, up)
		runtimeapi.RegisterImageServiceServer(gs, up)
	})
	rt, err := New(context.Background(), "unix://"+upPath, Options{ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	proxyPath := serve(t, dir, "proxy.sock", func(gs *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(gs, rt)
		runtimeapi.RegisterImageServiceServer(gs, rt)
	})
	conn, err := grpc.NewClient("unix://"+proxyPath,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

func TestUnaryForwarding(t *testing.T) {
	up := &upstream{bigPayload: 5 << 20} // above gRPC's 4 MiB default
	client := setup(t, up)
	ctx := context.Background()

	tests := []struct {
		desc     string
		call     func() (any, error)
		wantCode codes.Code
		wantMsg  string // exact message for errors; substring of the reply otherwise
	}{
		{desc: "Version reply passes through", call: func() (any, error) {
			r, err := client.Version(ctx, &runtimeapi.VersionRequest{})
			return r.GetRuntimeName() + "/" + r.GetRuntimeVersion(), err
		}, wantCode: codes.OK, wantMsg: "upstream/9.9.9"},
		{desc: "NotFound keeps code and message", call: func() (any, error) {
			return client.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "abc"})
		}, wantCode: codes.NotFound, wantMsg: `an error occurred when try to find container "abc": not found`},
		{desc: "FailedPrecondition keeps code and message", call: func() (any, error) {
			return client.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: "abc"})
		}, wantCode: codes.FailedPrecondition, wantMsg: "container is in CONTAINER_EXITED state"},
		{desc: "Unimplemented from the runtime passes through", call: func() (any, error) {
			return client.CheckpointPod(ctx, &runtimeapi.CheckpointPodRequest{PodSandboxId: "p"})
		}, wantCode: codes.Unimplemented, wantMsg: "method CheckpointPod not implemented"},
		{desc: "Exec returns the runtime's streaming URL unchanged", call: func() (any, error) {
			r, err := client.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "c9", Cmd: []string{"sh"}})
			return r.GetUrl(), err
		}, wantCode: codes.OK, wantMsg: "http://127.0.0.1:10010/exec/c9-token"},
		{desc: "a 5 MiB reply fits the 16 MiB limit", call: func() (any, error) {
			r, err := client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
			if err != nil {
				return nil, err
			}
			if n := len(r.GetContainers()[0].GetLabels()["big"]); n != 5<<20 {
				return nil, status.Errorf(codes.DataLoss, "label has %d bytes", n)
			}
			return "ok", nil
		}, wantCode: codes.OK, wantMsg: "ok"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := tc.call()
			st, _ := status.FromError(err)
			if st.Code() != tc.wantCode {
				t.Fatalf("code = %v (%v), want %v", st.Code(), err, tc.wantCode)
			}
			if err != nil {
				if st.Message() != tc.wantMsg {
					t.Errorf("message = %q, want %q", st.Message(), tc.wantMsg)
				}
				return
			}
			if s, _ := got.(string); s != tc.wantMsg {
				t.Errorf("reply = %v, want %q", got, tc.wantMsg)
			}
		})
	}
}

func TestImageErrorPassesThrough(t *testing.T) {
	up := &upstream{}
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	upPath := serve(t, dir, "up.sock", func(gs *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(gs, up)
		runtimeapi.RegisterImageServiceServer(gs, up)
	})
	rt, err := New(context.Background(), upPath, Options{}) // bare path form
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, err = rt.PullImage(context.Background(), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "nope"}})
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unknown || st.Message() != "failed to pull and unpack image: not found" {
		t.Fatalf("PullImage error = %v, want the runtime's Unknown status untouched", err)
	}
}

func TestEventStream(t *testing.T) {
	t.Run("runtime ending the stream ends the client's", func(t *testing.T) {
		client := setup(t, &upstream{events: 3, endStream: true})
		stream, err := client.GetContainerEvents(context.Background(), &runtimeapi.GetEventsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for {
			ev, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Recv: %v", err)
			}
			got = append(got, ev.GetCreatedAt())
		}
		if len(got) != 3 || got[0] != 1 || got[2] != 3 {
			t.Fatalf("events = %v, want [1 2 3] in order", got)
		}
	})
	t.Run("client cancelling cancels the runtime stream", func(t *testing.T) {
		up := &upstream{events: 2, streamClosed: make(chan struct{})}
		client := setup(t, up)
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := client.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := stream.Recv(); err != nil {
				t.Fatalf("Recv: %v", err)
			}
		}
		cancel()
		select {
		case <-up.streamClosed:
		case <-time.After(5 * time.Second):
			t.Fatal("the runtime's stream was not cancelled after the client went away")
		}
	})
}

func TestNew(t *testing.T) {
	tests := []struct {
		desc     string
		endpoint string
		wantErr  error
	}{
		{desc: "tcp endpoint refused", endpoint: "tcp://127.0.0.1:1234", wantErr: errdefs.ErrInvalidArgument},
		{desc: "empty unix URL refused", endpoint: "unix://", wantErr: errdefs.ErrInvalidArgument},
		{desc: "relative path refused", endpoint: "run/containerd.sock", wantErr: errdefs.ErrInvalidArgument},
		{desc: "socket that does not exist is unavailable", endpoint: "unix:///nonexistent/splitlet-test.sock", wantErr: errdefs.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			rt, err := New(context.Background(), tc.endpoint, Options{ConnectTimeout: 300 * time.Millisecond})
			if err == nil {
				rt.Close()
				t.Fatalf("New(%q) succeeded, want %v", tc.endpoint, tc.wantErr)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("New(%q) = %v, want it to wrap %v", tc.endpoint, err, tc.wantErr)
			}
		})
	}
}

func TestForward(t *testing.T) {
	up := &upstream{}
	dir, err := os.MkdirTemp("", "cri") // short: a socket path's limit is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	upPath := serve(t, dir, "up.sock", func(gs *grpc.Server) {
		runtimeapi.RegisterRuntimeServiceServer(gs, up)
	})
	rt, err := New(context.Background(), upPath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()

	req, err := proto.Marshal(&runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	var reply passthrough.Frame
	if err := rt.Forward(ctx, "/runtime.v1.RuntimeService/Version", &passthrough.Frame{Bytes: req}, &reply); err != nil {
		t.Fatal(err)
	}
	var got runtimeapi.VersionResponse
	if err := proto.Unmarshal(reply.Bytes, &got); err != nil {
		t.Fatalf("the forwarded reply does not decode: %v", err)
	}
	if got.GetRuntimeName() != "upstream" || got.GetRuntimeVersion() != "9.9.9" {
		t.Errorf("forwarded Version = %v, want the upstream's reply", &got)
	}

	req, err = proto.Marshal(&runtimeapi.ContainerStatusRequest{ContainerId: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	err = rt.Forward(ctx, "/runtime.v1.RuntimeService/ContainerStatus", &passthrough.Frame{Bytes: req}, &reply)
	if st, _ := status.FromError(err); st.Code() != codes.NotFound || !strings.Contains(st.Message(), `"abc"`) {
		t.Errorf("forwarded ContainerStatus = %v, want the upstream's NotFound naming the ID it decoded", err)
	}
}
