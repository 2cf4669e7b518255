package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"connectrpc.com/connect"
	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/sync/internal/imagegc"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
)

// ContainerGC removes every dead container and sandbox no pod needs
// (*syncloop.Kubelet; the kubelet's ContainerGC).
type ContainerGC interface {
	DeleteAllUnusedContainers(ctx context.Context) error
}

var _ ContainerGC = (*syncloop.Kubelet)(nil)

// ImageGC removes every image no container uses and returns the bytes they
// took (*imagegc.Manager; the kubelet's ImageGC).
type ImageGC interface {
	DeleteUnusedImages(ctx context.Context) (int64, error)
}

var _ ImageGC = (*imagegc.Manager)(nil)

// NodeGC is what sync runs when the eviction manager asks for node-level
// reclaim (the kubelet's nodeReclaimFuncs): dead containers first, whose
// images then become unused, then images. A nil member is skipped.
type NodeGC struct {
	Containers ContainerGC
	Images     ImageGC
}

// reclaimer carries out the reclaim requests of the eviction stream one at
// a time, each on its own goroutine so the stream keeps delivering
// evictions meanwhile (a reclaim the manager stopped waiting for is
// followed by an eviction).
type reclaimer struct {
	c  *Client
	gc NodeGC
	// mu runs one reclaim at a time: a second request (after the manager
	// gave up on the first) waits for the first to finish.
	mu sync.Mutex
	wg sync.WaitGroup
}

// start runs req in the background; wait waits for every started one.
func (r *reclaimer) start(ctx context.Context, req *admissionv1.ReclaimRequest) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.reclaim(ctx, req)
	}()
}

func (r *reclaimer) wait() { r.wg.Wait() }

// reclaim runs the garbage collections req asks for, in the kubelet's
// order, carrying on past a failure as the kubelet's
// reclaimNodeLevelResources does, and reports to admission.
func (r *reclaimer) reclaim(ctx context.Context, req *admissionv1.ReclaimRequest) {
	log := logctx.From(ctx).With(zap.String("reclaim", req.GetId()), zap.String("signal", req.GetSignal()))
	log.Info("node-level reclaim requested by the eviction manager",
		zap.Bool("containers", req.GetContainers()), zap.Bool("images", req.GetImages()))
	var errs []error
	var freed int64
	if req.GetContainers() && r.gc.Containers != nil {
		if err := r.gc.Containers.DeleteAllUnusedContainers(ctx); err != nil {
			errs = append(errs, fmt.Errorf("delete unused containers: %w", err))
		}
	}
	if req.GetImages() && r.gc.Images != nil {
		n, err := r.gc.Images.DeleteUnusedImages(ctx)
		freed = n
		if err != nil {
			errs = append(errs, fmt.Errorf("delete unused images: %w", err))
		}
	}
	report := &admissionv1.ReportReclaimRequest{Id: req.GetId(), ImageBytesFreed: freed}
	if err := errors.Join(errs...); err != nil {
		report.Error = err.Error()
		log.Warn("node-level reclaim failed in part", zap.Error(err))
	}
	if ctx.Err() != nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, r.c.opts.Timeout)
	defer cancel()
	_, err := r.c.svc.ReportReclaim(rctx, connect.NewRequest(report))
	switch {
	case err == nil:
		log.Info("node-level reclaim reported", zap.Int64("imageBytesFreed", freed))
	case connect.CodeOf(err) == connect.CodeNotFound:
		// Another sync answered first, or the manager stopped waiting
		// and evicted; the next cycle sees what this one freed.
		log.Info("node-level reclaim done after the eviction manager stopped waiting", zap.Int64("imageBytesFreed", freed))
	default:
		log.Warn("cannot report a node-level reclaim to admission", zap.Error(err))
	}
}
