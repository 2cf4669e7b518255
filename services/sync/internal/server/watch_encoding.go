package server

import (
	"fmt"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// watchEncoder turns one watch event into a WatchResponse in the encoding
// its watcher asked for, as the API server's watch serves the content type
// the client negotiated (application/json or
// application/vnd.kubernetes.protobuf). One encoder serves one watch stream;
// it is not safe for concurrent use.
//
// A change sent to several watchers is encoded once per watcher: the
// common case is one watcher (a controller, the bench), and sharing the
// bytes would need a cache keyed by event under a lock on every send.
type watchEncoder struct {
	protobuf bool
	// buf is reused from one protobuf event to the next: Send marshals the
	// response (copying the bytes) before the next encode, so one buffer of
	// the largest pod seen serves the whole stream.
	buf []byte
}

// newWatchEncoder returns the encoder for enc, or an InvalidArgument error
// naming the field for a value this server does not know.
func newWatchEncoder(enc podv1.WatchEncoding) (*watchEncoder, error) {
	switch enc {
	case podv1.WatchEncoding_WATCH_ENCODING_UNSPECIFIED, podv1.WatchEncoding_WATCH_ENCODING_STRUCT:
		return &watchEncoder{}, nil
	case podv1.WatchEncoding_WATCH_ENCODING_KUBERNETES_PROTOBUF:
		return &watchEncoder{protobuf: true}, nil
	}
	// The wording of a Kubernetes field.NotSupported error.
	return nil, fmt.Errorf("encoding: Unsupported value: %d: supported values: %q, %q, %q: %w", int32(enc),
		podv1.WatchEncoding_WATCH_ENCODING_UNSPECIFIED, podv1.WatchEncoding_WATCH_ENCODING_STRUCT,
		podv1.WatchEncoding_WATCH_ENCODING_KUBERNETES_PROTOBUF, errdefs.ErrInvalidArgument)
}

// encode renders one event. The returned response (and, for protobuf, its
// bytes) is valid until the next call.
func (e *watchEncoder) encode(typ podv1.WatchEventType, pod *v1.Pod) (*podv1.WatchResponse, error) {
	if !e.protobuf {
		st, err := podToStruct(pod)
		if err != nil {
			return nil, err
		}
		return &podv1.WatchResponse{Type: typ, Pod: st}, nil
	}
	// k8s.io/api's generated marshalling writes the Pod message only
	// (metadata, spec, status); TypeMeta is not part of it, so there is no
	// apiVersion/kind to set, unlike podToStruct.
	size := pod.Size()
	if cap(e.buf) < size {
		e.buf = make([]byte, size)
	}
	n, err := pod.MarshalToSizedBuffer(e.buf[:size])
	if err != nil {
		return nil, fmt.Errorf("encode pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return &podv1.WatchResponse{Type: typ, PodProtobuf: e.buf[size-n : size]}, nil
}
