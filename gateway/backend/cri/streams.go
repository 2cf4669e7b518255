package cri

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Server-streaming RPCs. Each is a copy loop from the runtime's stream to the
// gateway client's stream.

func (r *Runtime) GetContainerEvents(req *runtimeapi.GetEventsRequest, srv grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	return forward(srv, func(ctx context.Context) (grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse], error) {
		return r.runtime.GetContainerEvents(ctx, req)
	})
}

func (r *Runtime) StreamPodSandboxes(req *runtimeapi.StreamPodSandboxesRequest, srv grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxesResponse]) error {
	return forward(srv, func(ctx context.Context) (grpc.ServerStreamingClient[runtimeapi.StreamPodSandboxesResponse], error) {
		return r.runtime.StreamPodSandboxes(ctx, req)
	})
}

func (r *Runtime) StreamContainers(req *runtimeapi.StreamContainersRequest, srv grpc.ServerStreamingServer[runtimeapi.StreamContainersResponse]) error {
	return forward(srv, func(ctx context.Context) (grpc.ServerStreamingClient[runtimeapi.StreamContainersResponse], error) {
		return r.runtime.StreamContainers(ctx, req)
	})
}

func (r *Runtime) StreamContainerStats(req *runtimeapi.StreamContainerStatsRequest, srv grpc.ServerStreamingServer[runtimeapi.StreamContainerStatsResponse]) error {
	return forward(srv, func(ctx context.Context) (grpc.ServerStreamingClient[runtimeapi.StreamContainerStatsResponse], error) {
		return r.runtime.StreamContainerStats(ctx, req)
	})
}

func (r *Runtime) StreamPodSandboxStats(req *runtimeapi.StreamPodSandboxStatsRequest, srv grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxStatsResponse]) error {
	return forward(srv, func(ctx context.Context) (grpc.ServerStreamingClient[runtimeapi.StreamPodSandboxStatsResponse], error) {
		return r.runtime.StreamPodSandboxStats(ctx, req)
	})
}

func (r *Runtime) StreamPodSandboxMetrics(req *runtimeapi.StreamPodSandboxMetricsRequest, srv grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxMetricsResponse]) error {
	return forward(srv, func(ctx context.Context) (grpc.ServerStreamingClient[runtimeapi.StreamPodSandboxMetricsResponse], error) {
		return r.runtime.StreamPodSandboxMetrics(ctx, req)
	})
}

func (r *Runtime) StreamImages(req *runtimeapi.StreamImagesRequest, srv grpc.ServerStreamingServer[runtimeapi.StreamImagesResponse]) error {
	return forward(srv, func(ctx context.Context) (grpc.ServerStreamingClient[runtimeapi.StreamImagesResponse], error) {
		return r.images.StreamImages(ctx, req)
	})
}

// forward opens the runtime's stream with a context tied to the client's and
// copies every message until one side ends: the runtime ending the stream
// (EOF: nil, or its error returned untouched), or the client going away (its
// context cancels the runtime stream through the derived context, and a
// failed Send returns). The deferred cancel releases the runtime's stream on
// every path.
func forward[T any](dst grpc.ServerStreamingServer[T], open func(context.Context) (grpc.ServerStreamingClient[T], error)) error {
	ctx, cancel := context.WithCancel(dst.Context())
	defer cancel()
	src, err := open(ctx)
	if err != nil {
		return err
	}
	for {
		msg, err := src.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := dst.Send(msg); err != nil {
			return err
		}
	}
}
