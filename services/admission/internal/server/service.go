// Package server serves splitlet's AdmissionService (Admit, AdmitPods,
// WatchEvictions, ReportReclaim, GetNode) with connect-go, so gRPC, gRPC-Web and Connect
// clients reach it on one h2c port, beside gRPC health, Prometheus /metrics
// and, when asked for, Go's pprof handlers under /debug/pprof/. It is the wire boundary: it decodes the Kubernetes protobuf
// bytes of pods and nodes, resolves active pods sent by reference, turns
// errors into Connect codes (errors.go, the only place that does) and hands
// decoded objects to the admitter.
//
//	svc := server.NewService(server.Options{Admitter: a, Evictions: mgr, Logger: log})
//	http.ListenAndServe(addr, svc.Handler())
//
// Run wires the whole process from a config.Config.
package server

import (
	"context"
	"crypto/sha256"
	"net/http"
	"sync"

	"connectrpc.com/grpchealth"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/admission/eviction"
	"github.com/splitlet/splitlet/services/admission/internal/admitter"
	"github.com/splitlet/splitlet/services/admission/internal/podcache"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// Admitter decides admission and describes the node.
type Admitter interface {
	// Admit decides whether pod may run beside active; it never fails,
	// rejections carry a reason (lifecycle.PodAdmitHandler's contract).
	Admit(ctx context.Context, pod *v1.Pod, active []*v1.Pod) lifecycle.PodAdmitResult
	// Node returns the node object with its conditions; the result is the
	// caller's. Errors wrap errdefs sentinels.
	Node(ctx context.Context) (*v1.Node, error)
}

var _ Admitter = (*admitter.Admitter)(nil)

// EvictionSource publishes the eviction manager's decisions and its
// requests for node-level reclaim, and takes the reports of those.
type EvictionSource interface {
	// Subscribe returns a channel receiving every eviction decided from
	// now on; it is closed when ctx is done.
	Subscribe(ctx context.Context) <-chan eviction.Eviction
	// SubscribeReclaims is Subscribe for node-level reclaim requests.
	SubscribeReclaims(ctx context.Context) <-chan eviction.ReclaimRequest
	// ReportReclaim answers the request named id; an id not awaited is
	// an error wrapping errdefs.ErrNotFound.
	ReportReclaim(ctx context.Context, id string, report eviction.ReclaimReport) error
}

var _ EvictionSource = (*eviction.Manager)(nil)

// PodStore decodes core/v1 Pods from their Kubernetes protobuf encoding and
// keeps them, so clients may name the active pods they sent before by
// reference (UID and SHA-256 digest of the bytes). *podcache.Cache
// implements it.
type PodStore interface {
	// Decode returns the pod, or the decoding error; the pod is shared
	// and must not be changed. b is not retained.
	Decode(b []byte) (*v1.Pod, error)
	// DecodeRef is Decode that also returns the reference the pod can
	// be named by from now on.
	DecodeRef(b []byte) (*v1.Pod, podcache.Ref, error)
	// Resolve returns the pods refs name, in order, or the indexes of
	// the refs it does not hold (and no pods).
	Resolve(refs []podcache.Ref) (pods []*v1.Pod, missing []int)
	// Reserve readies the store for a request naming n pods, so that
	// none of them is forgotten before the next request.
	Reserve(n int)
	// PutSet keeps pods, resolved or decoded for refs, as the active set
	// named digest (podcache.SetDigest(refs)), and says whether it did.
	PutSet(digest [sha256.Size]byte, refs []podcache.Ref, pods []*v1.Pod) bool
	// Set returns the active set kept under digest and its references,
	// if held; the slices are shared and must not be changed.
	Set(digest [sha256.Size]byte) ([]*v1.Pod, []podcache.Ref, bool)
}

var _ PodStore = (*podcache.Cache)(nil)

// Options configure a Service.
type Options struct {
	// Admitter is required.
	Admitter Admitter
	// Evictions, when nil, makes WatchEvictions streams stay open and send
	// nothing: without an eviction manager nothing is ever evicted.
	Evictions EvictionSource
	// Logger defaults to a no-op logger.
	Logger *zap.Logger
	// Pods decodes and keeps the pods of requests; nil means a store of
	// the service's own. Run shares one with the admitter and the
	// plugins (newAdmission).
	Pods PodStore
	// Profiling makes Handler serve Go's pprof handlers under
	// /debug/pprof/ beside /metrics (config.Config.Profiling).
	Profiling bool
	// Guard wraps the AdmissionService's handler so that only
	// authenticated callers reach it (apiauth.Listen.Authenticator); gRPC
	// health and the ops endpoints stay open. Nil serves every caller.
	Guard func(http.Handler) http.Handler
}

// Service implements admissionv1connect.AdmissionServiceHandler, one file
// per RPC (admit.go, admit_pods.go, watch_evictions.go, report_reclaim.go,
// get_node.go);
// active_pods.go reads the active set both admit RPCs carry.
type Service struct {
	admitter  Admitter
	evictions EvictionSource
	pods      PodStore
	log       *zap.Logger
	metrics   *metrics
	health    *grpchealth.StaticChecker
	profiling bool
	guard     func(http.Handler) http.Handler

	drainOnce sync.Once
	draining  chan struct{}
}

var _ admissionv1connect.AdmissionServiceHandler = (*Service)(nil)

// NewService returns a Service with its own metrics registry.
func NewService(opts Options) *Service {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	// Active pods sent by reference must be resolvable, so a store is
	// always there.
	pods := opts.Pods
	if pods == nil {
		pods = &podcache.Cache{}
	}
	return &Service{
		admitter:  opts.Admitter,
		evictions: opts.Evictions,
		pods:      pods,
		log:       log,
		metrics:   newMetrics(),
		profiling: opts.Profiling,
		guard:     opts.Guard,
		// Serving from the start: the admitter is complete before a
		// Service exists.
		health:   grpchealth.NewStaticChecker(admissionv1connect.AdmissionServiceName),
		draining: make(chan struct{}),
	}
}

// Drain marks the service NOT_SERVING in gRPC health and ends every open
// WatchEvictions stream with Unavailable, so watchers reconnect to the next
// instance instead of holding a shutdown open. New streams end at once; Admit
// keeps answering until the listener closes. It is idempotent.
func (s *Service) Drain() {
	s.drainOnce.Do(func() {
		s.health.SetStatus("", grpchealth.StatusNotServing)
		s.health.SetStatus(admissionv1connect.AdmissionServiceName, grpchealth.StatusNotServing)
		close(s.draining)
	})
}
