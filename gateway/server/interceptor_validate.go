package server

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/splitlet/splitlet/gateway/backend/passthrough"
)

// validate is the validation step of the unary chain (unaryChain): it
// refuses requests missing a field the runtime cannot do without, before the
// backend or the policy sees them. Runtimes check these too, but each words
// it differently (containerd answers an empty container ID with NotFound);
// one InvalidArgument naming the field is clearer to callers. A request
// forwarded as bytes (passthrough.Frame) is checked on its encoding, with
// the same fields.
func (m *method) validate(req any) error {
	var field string
	switch r := req.(type) {
	case *passthrough.Frame:
		field = m.required.missingIn(r.Bytes)
	case proto.Message:
		field = m.required.missing(r.ProtoReflect())
	}
	if field != "" {
		return &missingFieldError{method: m.op, field: field}
	}
	return nil
}

// missingFieldError wraps errdefs.ErrInvalidArgument with a message naming
// the method and the field, e.g. "StartContainer: container_id is required".
type missingFieldError struct{ method, field string }

func (e *missingFieldError) Error() string {
	return fmt.Sprintf("%s: %s is required", e.method, e.field)
}

func (e *missingFieldError) Unwrap() error { return errdefs.ErrInvalidArgument }

// requiredFields names, per CRI request, the fields the runtime cannot do
// without, in the order they are checked: a string must be non-empty, a
// message present. Requests not listed have no required fields.
var requiredFields = map[protoreflect.FullName][]string{
	"runtime.v1.RunPodSandboxRequest":             {"config", "config.metadata"},
	"runtime.v1.CreateContainerRequest":           {"pod_sandbox_id", "config", "config.metadata"},
	"runtime.v1.StopPodSandboxRequest":            {"pod_sandbox_id"},
	"runtime.v1.RemovePodSandboxRequest":          {"pod_sandbox_id"},
	"runtime.v1.PodSandboxStatusRequest":          {"pod_sandbox_id"},
	"runtime.v1.PodSandboxStatsRequest":           {"pod_sandbox_id"},
	"runtime.v1.PortForwardRequest":               {"pod_sandbox_id"},
	"runtime.v1.UpdatePodSandboxResourcesRequest": {"pod_sandbox_id"},
	"runtime.v1.StartContainerRequest":            {"container_id"},
	"runtime.v1.StopContainerRequest":             {"container_id"},
	"runtime.v1.RemoveContainerRequest":           {"container_id"},
	"runtime.v1.ContainerStatusRequest":           {"container_id"},
	"runtime.v1.ContainerStatsRequest":            {"container_id"},
	"runtime.v1.UpdateContainerResourcesRequest":  {"container_id"},
	"runtime.v1.ReopenContainerLogRequest":        {"container_id"},
	"runtime.v1.ExecSyncRequest":                  {"container_id"},
	"runtime.v1.ExecRequest":                      {"container_id"},
	"runtime.v1.AttachRequest":                    {"container_id"},
	"runtime.v1.CheckpointContainerRequest":       {"container_id"},
	"runtime.v1.PullImageRequest":                 {"image", "image.image"},
	"runtime.v1.ImageStatusRequest":               {"image", "image.image"},
	"runtime.v1.RemoveImageRequest":               {"image", "image.image"},
}

// fieldPath is one required field: its proto path ("image.image") and the
// descriptors from the request down to it.
type fieldPath struct {
	name string
	fds  []protoreflect.FieldDescriptor
}

// requirements are a request type's required fields, in checking order.
type requirements []fieldPath

// requirementsOf resolves the required fields of the request of fullMethod
// ("/runtime.v1.RuntimeService/StartContainer"); none for a method that is not
// in the proto registry or has none listed. A listed name that does not
// resolve is a mistake in requiredFields, and panics (TestRequiredFieldsResolve).
func requirementsOf(fullMethod string) requirements {
	service, name, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if !ok {
		return nil
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return nil
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil
	}
	return requirementsFor(md.Input())
}

// requirementsFor resolves requiredFields' entry for msg.
func requirementsFor(msg protoreflect.MessageDescriptor) requirements {
	var reqs requirements
	for _, path := range requiredFields[msg.FullName()] {
		fp := fieldPath{name: path}
		md := msg
		for part := range strings.SplitSeq(path, ".") {
			if md == nil {
				panic(fmt.Sprintf("server: required field %s of %s: %s is not a message", path, msg.FullName(), fp.fds[len(fp.fds)-1].Name()))
			}
			fd := md.Fields().ByName(protoreflect.Name(part))
			if fd == nil {
				panic(fmt.Sprintf("server: required field %s of %s does not exist", path, msg.FullName()))
			}
			fp.fds = append(fp.fds, fd)
			md = fd.Message()
		}
		reqs = append(reqs, fp)
	}
	return reqs
}

// missing returns the path of the first required field msg lacks, or "".
func (r requirements) missing(msg protoreflect.Message) string {
	for _, fp := range r {
		if !fp.setIn(msg) {
			return fp.name
		}
	}
	return ""
}

// missingIn is missing for a request's encoding.
func (r requirements) missingIn(b []byte) string {
	for _, fp := range r {
		if _, set := encodedField(b, fp.fds); !set {
			return fp.name
		}
	}
	return ""
}

// setIn reports whether msg has the field: every message on the way
// present, and a present message or a non-empty string at the end.
func (fp fieldPath) setIn(msg protoreflect.Message) bool {
	for _, fd := range fp.fds[:len(fp.fds)-1] {
		if !msg.Has(fd) {
			return false
		}
		msg = msg.Get(fd).Message()
	}
	leaf := fp.fds[len(fp.fds)-1]
	if leaf.Kind() == protoreflect.MessageKind {
		return msg.Has(leaf)
	}
	return msg.Get(leaf).String() != ""
}

// encodedField finds the field at path in the encoded message b by proto's
// decoding rules (of a string the last occurrence counts; the occurrences of
// a message merge): found reports it occurs, set that it is a present
// message or a non-empty string. An encoding that does not parse counts as
// set: the runtime, decoding it, gives the error.
func encodedField(b []byte, path []protoreflect.FieldDescriptor) (found, set bool) {
	want := path[0].Number()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return true, true
		}
		b = b[n:]
		if num != want || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return true, true
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return true, true
		}
		b = b[n:]
		switch {
		case len(path) > 1:
			if f, s := encodedField(v, path[1:]); f {
				found, set = true, s
			}
		case path[0].Kind() == protoreflect.MessageKind:
			found, set = true, true
		default:
			found, set = true, len(v) > 0
		}
	}
	return found, set
}
