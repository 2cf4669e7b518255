package fake

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// event is one container event as the broker hands it to every subscriber.
//
// Every event carries its pod's sandbox status and all its containers'
// statuses, labels and annotations included, so marshalling it is most of
// what a send costs; sync and a watcher (crictl, a benchmark's harness)
// subscribing together used to pay that once each. An event handed to more
// than one subscriber is instead encoded once per wire encoding, by the
// first subscriber to send it, into a grpc.PreparedMsg that the others send
// as is.
type event struct {
	resp   *runtimeapi.ContainerEventResponse
	fanout int // subscribers the event was handed to; fixed before handing out

	mu      sync.Mutex
	encoded []encodedEvent // one per wire encoding seen; nearly always one
}

// encodedEvent is an event encoded for the streams of one wire encoding.
type encodedEvent struct {
	wire string
	msg  *grpc.PreparedMsg
}

// send sends the event on stream, whose wire encoding (wireEncoding) is
// wire. An event only one subscriber gets, or a stream whose encoding is not
// known (a caller in the same process), is sent as a plain message, exactly
// as before events were shared: preparing it would only add a copy.
func (e *event) send(stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse], wire string) error {
	if e.fanout < 2 || wire == "" {
		return stream.Send(e.resp)
	}
	if pm := e.prepared(stream, wire); pm != nil {
		return stream.SendMsg(pm)
	}
	return stream.Send(e.resp)
}

// prepared returns the event encoded for streams of encoding wire, encoding
// it with stream's codec and compressor if no stream of that encoding has
// yet. The lock is held while encoding so that subscribers arriving
// meanwhile wait for that encoding rather than make their own. It returns
// nil when the encoding fails; the caller then sends the plain message,
// which reports a real marshalling error itself.
func (e *event) prepared(stream grpc.ServerStream, wire string) *grpc.PreparedMsg {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, enc := range e.encoded {
		if enc.wire == wire {
			return enc.msg
		}
	}
	pm := new(grpc.PreparedMsg)
	if err := pm.Encode(stream, e.resp); err != nil {
		return nil
	}
	e.encoded = append(e.encoded, encodedEvent{wire: wire, msg: pm})
	return pm
}

// sendCompressor is implemented by the server transport stream grpc-go puts
// in a handler's context; grpc.SetSendCompressor relies on the same type.
type sendCompressor interface{ SendCompress() string }

// wireEncoding names how messages of the gRPC stream whose handler context
// is ctx are encoded, so that streams of equal name can share one encoded
// event: the server (by its listener's address, since codec and compressor
// options are per server), the content type (which picks the codec) and the
// compressor of sent messages (the one the client compressed its request
// with, when the server has it). It returns "" when any of these is unknown
// (a call in the same process, or a grpc-go whose transport stream no longer
// says its compressor), and such a stream gets its events marshalled for it
// alone.
func wireEncoding(ctx context.Context) string {
	comp, ok := grpc.ServerTransportStreamFromContext(ctx).(sendCompressor)
	if !ok {
		return ""
	}
	p, ok := peer.FromContext(ctx)
	if !ok || p.LocalAddr == nil {
		return ""
	}
	md, _ := metadata.FromIncomingContext(ctx)
	ct := md.Get("content-type")
	if len(ct) != 1 {
		return ""
	}
	return p.LocalAddr.Network() + ":" + p.LocalAddr.String() + " " + ct[0] + " " + comp.SendCompress()
}
