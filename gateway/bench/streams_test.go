package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/splitlet/splitlet/gateway/backend/cri"
)

// BenchmarkStreams measures streams through the gateway's streaming proxy
// against the same streams straight to the runtime's streaming server
// (issue 18: within 1.2x), on the fake backend and, when
// SPLITLET_CONTAINERD_ENDPOINT names one, on containerd:
//
//	exec       a CRI Exec of `true` and its SPDY stream to the exit status
//	           (what every kubectl exec pays before its command runs)
//	echo-64B   in one open exec of `cat`, 64 bytes written and read back
//	           (the round trip of a keystroke in kubectl exec -it)
//	portforward-1MiB  1 MiB written into a port-forward stream and read
//	           back from an echo server (MB/s)
//
// direct takes the runtime's URL (Exec through a plain gRPC server for the
// fake, containerd's own socket for containerd); gateway takes the
// gateway's, from a gateway serving in the benchmark's process.
func BenchmarkStreams(b *testing.B) {
	b.Run("fake", func(b *testing.B) {
		rt, sandboxID := fixture(b, 1)
		ctr, err := rt.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{})
		if err != nil || len(ctr.GetContainers()) != 1 {
			b.Fatalf("the fixture's container: %v", err)
		}
		echo, _ := echoServer(b) // the fake echoes on every port; any number will do
		benchStreams(b, streamTarget{
			direct:    plainServer(b, rt),
			gateway:   gatewayServer(b, rt),
			container: ctr.GetContainers()[0].GetId(),
			sandbox:   sandboxID,
			port:      echo,
		})
	})
	b.Run("containerd", func(b *testing.B) {
		endpoint := os.Getenv("SPLITLET_CONTAINERD_ENDPOINT")
		if endpoint == "" {
			b.Skip("SPLITLET_CONTAINERD_ENDPOINT not set: point it at a running containerd's CRI socket (unix:///path) with busybox imported")
		}
		rt, err := cri.New(context.Background(), endpoint, cri.Options{ConnectTimeout: 5 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rt.Close() })
		conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		direct := runtimeapi.NewRuntimeServiceClient(conn)
		sandboxID, containerID := busyboxPod(b, direct)
		// A host-network sandbox: containerd forwards to this process's
		// own echo server.
		port, _ := echoServer(b)
		benchStreams(b, streamTarget{
			direct:    client{RuntimeServiceClient: direct},
			gateway:   gatewayServer(b, rt),
			container: containerID,
			sandbox:   sandboxID,
			port:      port,
		})
	})
}

type streamTarget struct {
	direct, gateway client
	container       string
	sandbox         string
	port            int32
}

func benchStreams(b *testing.B, t streamTarget) {
	ctx := context.Background()
	for _, path := range []struct {
		name string
		c    client
	}{{"direct", t.direct}, {"gateway", t.gateway}} {
		b.Run("exec/"+path.name, func(b *testing.B) {
			Measure(b, func() error { return execTrue(ctx, path.c, t.container) })
		})
	}
	for _, path := range []struct {
		name string
		c    client
	}{{"direct", t.direct}, {"gateway", t.gateway}} {
		b.Run("echo-64B/"+path.name, func(b *testing.B) {
			session := openCat(b, path.c, t.container)
			msg, got := bytes.Repeat([]byte("k"), 64), make([]byte, 64)
			Measure(b, func() error {
				if _, err := session.in.Write(msg); err != nil {
					return err
				}
				_, err := io.ReadFull(session.out, got)
				return err
			})
		})
	}
	for _, path := range []struct {
		name string
		c    client
	}{{"direct", t.direct}, {"gateway", t.gateway}} {
		b.Run("portforward-1MiB/"+path.name, func(b *testing.B) {
			stream := openPortForward(b, path.c, t.sandbox, t.port)
			chunk, got := bytes.Repeat([]byte("p"), 1<<20), make([]byte, 1<<20)
			b.SetBytes(int64(len(chunk)))
			Measure(b, func() error {
				werr := make(chan error, 1)
				go func() {
					_, err := stream.Write(chunk)
					werr <- err
				}()
				if _, err := io.ReadFull(stream, got); err != nil {
					return err
				}
				return <-werr
			})
		})
	}
}

// execTrue runs `true` in the container through an Exec URL, to its exit.
func execTrue(ctx context.Context, c client, containerID string) error {
	resp, err := c.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: containerID, Cmd: []string{"true"}, Stdout: true, Stderr: true})
	if err != nil {
		return err
	}
	ex, err := executor(resp.GetUrl())
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
}

func executor(rawURL string) (remotecommand.Executor, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
}

// catSession is an open exec of `cat`: what is written to in comes back
// on out.
type catSession struct {
	in  io.Writer
	out io.Reader
}

func openCat(b *testing.B, c client, containerID string) catSession {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := c.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: containerID, Cmd: []string{"cat"}, Stdin: true, Stdout: true})
	if err != nil {
		b.Fatal(err)
	}
	ex, err := executor(resp.GetUrl())
	if err != nil {
		b.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW})
		outW.Close()
	}()
	b.Cleanup(func() {
		inW.Close() // cat ends at EOF
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
	return catSession{in: inW, out: outR}
}

// openPortForward opens one port-forward data stream to port of the
// sandbox, as client-go's portforward does for one connection.
func openPortForward(b *testing.B, c client, sandboxID string, port int32) httpstream.Stream {
	b.Helper()
	resp, err := c.PortForward(context.Background(), &runtimeapi.PortForwardRequest{PodSandboxId: sandboxID, Port: []int32{port}})
	if err != nil {
		b.Fatal(err)
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		b.Fatal(err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		b.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	conn, _, err := dialer.Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		b.Fatalf("port-forward dial: %v", err)
	}
	b.Cleanup(func() { conn.Close() })
	headers := http.Header{}
	headers.Set(v1.StreamType, v1.StreamTypeError)
	headers.Set(v1.PortHeader, strconv.Itoa(int(port)))
	headers.Set(v1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		b.Fatal(err)
	}
	errStream.Close() // nothing to send on it
	go func() {
		if msg, _ := io.ReadAll(errStream); len(msg) > 0 {
			b.Errorf("port-forward error stream: %s", msg)
		}
	}()
	headers.Set(v1.StreamType, v1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// echoServer listens on a loopback port of this process and echoes every
// connection; it returns the port.
func echoServer(b *testing.B) (int32, net.Listener) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return int32(ln.Addr().(*net.TCPAddr).Port), ln
}

// busyboxPod runs a host-network sandbox with one busybox container
// sleeping in containerd, and removes both when the benchmark ends.
func busyboxPod(b *testing.B, rt runtimeapi.RuntimeServiceClient) (sandboxID, containerID string) {
	b.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("splitlet-bench-streams-%d", time.Now().UnixNano())
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "splitlet-bench", Uid: name},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.GetPodSandboxId()})
		rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.GetPodSandboxId()})
	})
	image := os.Getenv("SPLITLET_BUSYBOX_IMAGE")
	if image == "" {
		image = "docker.io/library/busybox:1.36"
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sb.GetPodSandboxId(),
		SandboxConfig: sbCfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
			Image:    &runtimeapi.ImageSpec{Image: image},
			Command:  []string{"sleep", "3600"},
		},
	})
	if err != nil {
		b.Fatalf("create a %s container (is it imported?): %v", image, err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.GetContainerId()}); err != nil {
		b.Fatal(err)
	}
	return sb.GetPodSandboxId(), c.GetContainerId()
}
