// Package passthrough lets the gateway forward a CRI call as the bytes its
// client sent, rather than decoding the request into its Go type and encoding
// it again for the runtime (and the reply the same way back). Most CRI calls
// carry nothing the gateway reads: sandbox and container status, lists,
// start, stop and remove go to the runtime as they came.
//
// A Frame holds one message's protobuf encoding. Codec is grpc-go's proto
// codec except for Frames, which it copies in and out unchanged: the gateway's
// server uses it for every call (grpc.ForceServerCodecV2) and the cri backend
// for the calls it forwards (grpc.ForceCodecV2), so a method whose handler
// asks for a Frame receives the request's bytes, and a Frame reply is written
// as it is.
package passthrough

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// Frame is the protobuf encoding of one message, never decoded.
type Frame struct {
	Bytes []byte
}

// Codec encodes Frames as their bytes and everything else as grpc-go's proto
// codec does. Its name is "proto", so on the wire nothing changes.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// protoCodec is grpc-go's registered proto codec, to which every message but
// a Frame goes.
var protoCodec = encoding.GetCodecV2(proto.Name)

// Marshal returns a Frame's bytes, or v encoded by the proto codec.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*Frame); ok {
		return mem.BufferSlice{mem.SliceBuffer(f.Bytes)}, nil
	}
	return protoCodec.Marshal(v)
}

// Unmarshal copies data into a Frame (grpc-go frees data once Unmarshal
// returns), or decodes it into v with the proto codec.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	if f, ok := v.(*Frame); ok {
		f.Bytes = data.Materialize()
		return nil
	}
	return protoCodec.Unmarshal(data, v)
}

// Name is the proto codec's, so the content type stays application/grpc+proto.
func (Codec) Name() string { return proto.Name }
