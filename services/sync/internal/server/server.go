// Package server serves splitlet-sync's PodService with Connect, so the same
// port answers gRPC, gRPC-Web and Connect's JSON (curl works). One file per
// RPC; errors from the layers below are errdefs sentinels (or CRI gRPC
// statuses) and become Connect codes here only (toConnectError).
//
//	srv := server.New(apiSource, podManager, recorder, criClient)
//	path, handler := podv1connect.NewPodServiceHandler(srv)
package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	"connectrpc.com/connect"

	"github.com/splitlet/splitlet/internal/connecterr"

	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/types/known/structpb"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

// PodSource is the writable pod source behind Apply and Delete
// (*source.APISource). Errors wrap errdefs sentinels: ErrInvalidArgument for
// a bad manifest, ErrNotFound for an unknown pod, ErrConflict for a pod being
// deleted.
type PodSource interface {
	Apply(ctx context.Context, data []byte, dryRun bool) ([]source.AppliedPod, error)
	Delete(ctx context.Context, namespace, name string, gracePeriod *int64) (*v1.Pod, error)
}

var _ PodSource = (*source.APISource)(nil)

// PodLister reads the pods of every source with their status
// (*podmanager.Manager).
type PodLister interface {
	GetPodByFullName(namespace, name string) *v1.Pod
	GetPodsWithStatus() []*v1.Pod
	Subscribe(buffer int) (<-chan podmanager.Event, func())
}

var _ PodLister = (*podmanager.Manager)(nil)

// Server implements podv1connect.PodServiceHandler.
type Server struct {
	source  PodSource
	pods    PodLister
	events  EventLister
	runtime runtimeapi.RuntimeServiceClient
	// watchers counts the open Watch streams, up to maxWatchers
	// (MaxWatchers; tests lower it).
	watchers    atomic.Int64
	maxWatchers int64
}

var _ podv1connect.PodServiceHandler = (*Server)(nil)

// New returns the PodService over src, pods, the recorded events and the
// runtime (for logs and exec).
func New(src PodSource, pods PodLister, evs EventLister, rt runtimeapi.RuntimeServiceClient) *Server {
	return &Server{source: src, pods: pods, events: evs, runtime: rt, maxWatchers: MaxWatchers}
}

// toConnectError is the one place errors become Connect codes: the shared
// conversion every splitlet service uses (internal/connecterr).
func toConnectError(err error) error { return connecterr.From(err) }

// MaxRequestBytes bounds one request's message, after decompression: the
// API server's limit on an object (3 MiB, etcd's request size), so one
// Apply cannot grow sync by the size of whatever it is sent. Larger
// requests are refused with ResourceExhausted naming both sizes.
const MaxRequestBytes = 3 << 20

// NewHandler is the PodService's HTTP handler for s, with its path, with
// MaxRequestBytes, WriteTimeout and opts applied.
func NewHandler(s *Server, opts ...connect.HandlerOption) (string, http.Handler) {
	path, h := podv1connect.NewPodServiceHandler(s, append([]connect.HandlerOption{connect.WithReadMaxBytes(MaxRequestBytes)}, opts...)...)
	return path, withWriteTimeout(h, WriteTimeout)
}

// podToStruct renders a pod as the Struct of its core/v1 JSON, so every
// field survives and JSON clients see exactly the Kubernetes object.
func podToStruct(pod *v1.Pod) (*structpb.Struct, error) {
	if pod.APIVersion == "" {
		pod = pod.DeepCopy()
		pod.APIVersion, pod.Kind = "v1", "Pod"
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("encode pod: %w", err)
	}
	return structpb.NewStruct(m)
}

// getPod finds a pod of any source, or returns a NotFound error.
func (s *Server) getPod(namespace, name string) (*v1.Pod, error) {
	if namespace == "" {
		namespace = "default"
	}
	if name == "" {
		return nil, fmt.Errorf("name: Required value: %w", errdefs.ErrInvalidArgument)
	}
	pod := s.pods.GetPodByFullName(namespace, name)
	if pod == nil {
		return nil, fmt.Errorf("pod %s/%s: %w", namespace, name, errdefs.ErrNotFound)
	}
	return pod, nil
}
