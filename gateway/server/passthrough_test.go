package server

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/gateway/backend/passthrough"
)

// forwardingRuntime is testRuntime behind backend.Forwarder, as a runtime at
// the other end of a socket: Forward decodes the request's bytes, calls
// testRuntime's method through the generated service descriptor, and encodes
// its reply. forwarded lists the methods that arrived as bytes.
type forwardingRuntime struct {
	*testRuntime
	mu        sync.Mutex
	forwarded []string
}

var _ backend.Forwarder = (*forwardingRuntime)(nil)

func (f *forwardingRuntime) Forward(ctx context.Context, fullMethod string, req, reply *passthrough.Frame) error {
	f.mu.Lock()
	f.forwarded = append(f.forwarded, operation(fullMethod))
	f.mu.Unlock()
	service, name, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	for _, desc := range []*grpc.ServiceDesc{&runtimeapi.RuntimeService_ServiceDesc, &runtimeapi.ImageService_ServiceDesc} {
		i := slices.IndexFunc(desc.Methods, func(m grpc.MethodDesc) bool { return m.MethodName == name })
		if desc.ServiceName != service || i < 0 {
			continue
		}
		dec := func(v any) error { return proto.Unmarshal(req.Bytes, v.(proto.Message)) }
		out, err := desc.Methods[i].Handler(f.testRuntime, ctx, dec, nil)
		if err != nil {
			return err
		}
		reply.Bytes, err = proto.Marshal(out.(proto.Message))
		return err
	}
	return status.Errorf(codes.Unimplemented, "unknown method %s", fullMethod)
}

func (f *forwardingRuntime) wasForwarded(method string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.forwarded, method)
}

// backends runs fn against testRuntime served the usual way and, as a
// Forwarder, with calls forwarded as bytes: the server's answers must not
// depend on which.
func backends(t *testing.T, fn func(t *testing.T, rt *testRuntime, b backend.Runtime)) {
	t.Run("decoded", func(t *testing.T) {
		rt := newTestRuntime()
		fn(t, rt, rt)
	})
	t.Run("forwarded as bytes", func(t *testing.T) {
		rt := newTestRuntime()
		fn(t, rt, &forwardingRuntime{testRuntime: rt})
	})
}

func TestForwardedAsBytes(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		method  string
		decoded bool // read by the policy, the deadline or the stream front
		call    func(runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) error
	}{
		{"Version", false, func(c runtimeapi.RuntimeServiceClient, _ runtimeapi.ImageServiceClient) error {
			r, err := c.Version(ctx, &runtimeapi.VersionRequest{})
			if err == nil && r.GetRuntimeName() != "test" {
				t.Errorf("Version's reply = %v, want the backend's", r)
			}
			return err
		}},
		{"ListContainers", false, func(c runtimeapi.RuntimeServiceClient, _ runtimeapi.ImageServiceClient) error {
			_, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
			return err
		}},
		{"PodSandboxStatus", false, func(c runtimeapi.RuntimeServiceClient, _ runtimeapi.ImageServiceClient) error {
			_, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "p"})
			return err
		}},
		{"ImageStatus", false, func(_ runtimeapi.RuntimeServiceClient, c runtimeapi.ImageServiceClient) error {
			_, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
			return err
		}},
		{"RunPodSandbox", true, func(c runtimeapi.RuntimeServiceClient, _ runtimeapi.ImageServiceClient) error {
			_, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
				Metadata: &runtimeapi.PodSandboxMetadata{Name: "n", Namespace: "ns"}}})
			return err
		}},
		{"StopContainer", true, func(c runtimeapi.RuntimeServiceClient, _ runtimeapi.ImageServiceClient) error {
			_, err := c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "c", Timeout: 1})
			return err
		}},
	}
	for _, decodeAll := range []bool{false, true} {
		f := &forwardingRuntime{testRuntime: newTestRuntime()}
		var opts []Option
		if decodeAll {
			opts = append(opts, WithEveryCallDecoded())
		}
		h := start(t, Config{}, f, opts...)
		rc, ic := h.runtime(), runtimeapi.NewImageServiceClient(h.conn)
		for _, c := range calls {
			err := c.call(rc, ic)
			if code := status.Code(err); code != codes.OK && code != codes.Unimplemented {
				t.Fatalf("%s: %v", c.method, err)
			}
			want := !c.decoded && !decodeAll
			if got := f.wasForwarded(c.method); got != want {
				t.Errorf("every call decoded %v: %s forwarded as bytes = %v, want %v", decodeAll, c.method, got, want)
			}
		}
	}
}

func TestValidationOfForwardedRequests(t *testing.T) {
	f := &forwardingRuntime{testRuntime: newTestRuntime()}
	h := start(t, Config{}, f)
	images := runtimeapi.NewImageServiceClient(h.conn)
	ctx := context.Background()
	for _, tc := range []struct {
		req     *runtimeapi.ImageStatusRequest
		wantMsg string
	}{
		{&runtimeapi.ImageStatusRequest{}, "ImageStatus: image is required"},
		{&runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{}}, "ImageStatus: image.image is required"},
	} {
		_, err := images.ImageStatus(ctx, tc.req)
		if st, _ := status.FromError(err); st.Code() != codes.InvalidArgument || st.Message() != tc.wantMsg {
			t.Errorf("ImageStatus(%v) = %v, want InvalidArgument %q", tc.req, err, tc.wantMsg)
		}
	}
	if f.wasForwarded("ImageStatus") {
		t.Error("an invalid ImageStatus reached the backend")
	}
}

// TestRequiredFieldsResolve checks every entry of requiredFields names a CRI
// request and fields it has (requirementsFor panics otherwise).
func TestRequiredFieldsResolve(t *testing.T) {
	for name, paths := range requiredFields {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := requirementsFor(d.(protoreflect.MessageDescriptor)); len(got) != len(paths) {
			t.Errorf("%s: %d fields resolved, want %d", name, len(got), len(paths))
		}
	}
	if r := requirementsOf("/runtime.v1.ImageService/PullImage"); len(r) != 2 || r[1].name != "image.image" {
		t.Errorf("PullImage's required fields = %v", r)
	}
}

// requestTypes are the CRI requests with required fields, for
// FuzzRequiredFields.
func requestTypes() []protoreflect.MessageType {
	var types []protoreflect.MessageType
	for name := range requiredFields {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
		if err != nil {
			panic(err)
		}
		types = append(types, mt)
	}
	slices.SortFunc(types, func(a, b protoreflect.MessageType) int {
		return strings.Compare(string(a.Descriptor().FullName()), string(b.Descriptor().FullName()))
	})
	return types
}

// FuzzRequiredFields checks that a request's encoding, as forwarded, is
// refused for the same missing field as the request decoded.
func FuzzRequiredFields(f *testing.F) {
	types := requestTypes()
	seeds := []proto.Message{
		&runtimeapi.StartContainerRequest{},
		&runtimeapi.StartContainerRequest{ContainerId: "c"},
		&runtimeapi.ImageStatusRequest{},
		&runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{}},
		&runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox", Annotations: map[string]string{"a": "b"}}},
		&runtimeapi.CreateContainerRequest{PodSandboxId: "p", Config: &runtimeapi.ContainerConfig{}},
		&runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "n"}}},
	}
	for _, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		for i, mt := range types {
			if mt.Descriptor().FullName() == m.ProtoReflect().Descriptor().FullName() {
				f.Add(uint8(i), b)
			}
		}
	}
	// A string set then emptied (the last one counts), and a message's two
	// occurrences merged, as proto decodes them.
	field := func(b []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	startIdx := slices.IndexFunc(types, func(mt protoreflect.MessageType) bool {
		return mt.Descriptor().FullName() == "runtime.v1.StartContainerRequest"
	})
	statusIdx := slices.IndexFunc(types, func(mt protoreflect.MessageType) bool {
		return mt.Descriptor().FullName() == "runtime.v1.ImageStatusRequest"
	})
	f.Add(uint8(startIdx), field(field(nil, 1, []byte("c")), 1, nil))
	f.Add(uint8(statusIdx), field(field(nil, 1, field(nil, 1, []byte("x"))), 1, nil))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		mt := types[int(which)%len(types)]
		msg := mt.New()
		if err := proto.Unmarshal(b, msg.Interface()); err != nil {
			return // the runtime refuses what does not decode
		}
		r := requirementsFor(mt.Descriptor())
		if decoded, raw := r.missing(msg), r.missingIn(b); decoded != raw {
			t.Fatalf("%s %x: missing %q decoded, %q from its encoding", mt.Descriptor().FullName(), b, decoded, raw)
		}
	})
}
