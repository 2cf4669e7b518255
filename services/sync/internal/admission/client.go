package admission

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
)

// DefaultTimeout bounds one Admit call: admission is local and answers in
// well under a millisecond, so a second means it is stuck, and a pod
// should rather wait (fail-closed) than hold the sync loop.
const DefaultTimeout = 2 * time.Second

// Options tune a Client. The zero value is usable.
type Options struct {
	// Timeout bounds each Admit call; 0 means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient carries the calls, in the Connect protocol; nil means
	// http.DefaultClient (HTTP/1.1 in cleartext, see New).
	HTTPClient connect.HTTPClient
	// RetryInitial and RetryMax bound the back-off of WatchEvictions
	// reconnections; 0 means 500 ms and 30 s.
	RetryInitial, RetryMax time.Duration
	// MaxBatch bounds the pods one AdmitPods call sends; 0 means
	// DefaultMaxBatch. The sync loop starts the pods of one call before
	// asking about the next, so a bound keeps the first pods of a burst
	// from waiting for the last.
	MaxBatch int
	// Name names the server in errors and logs (e.g. its unix:// socket
	// when endpoint is the base URL of a client dialling it); empty: the
	// endpoint.
	Name string
	// ClientOptions are added to the Connect client's (tracing's
	// interceptor, which carries the caller's trace context).
	ClientOptions []connect.ClientOption
}

// DefaultMaxBatch is the default Options.MaxBatch: big enough that the
// round trip is a small part of a call, small enough that one call stays
// around a millisecond on a loaded node.
const DefaultMaxBatch = 64

// Client talks to splitlet-admission. It is safe for concurrent use.
type Client struct {
	endpoint string
	opts     Options
	svc      admissionv1connect.AdmissionServiceClient
	// active sends the active pods by reference.
	active *activeSet
}

var _ syncloop.BatchAdmitter = (*Client)(nil)

// New returns a client of the AdmissionService at endpoint ("host:port" or
// "http://host:port"). Nothing is dialled until the first call.
//
// It speaks the Connect protocol, not gRPC, so that a cleartext client
// may use HTTP/1.1, where a unary call is one write each way: over h2c the
// server writes a response's headers, data and trailers apart and
// acknowledges each request's data, which cost the admission service a
// third of its CPU per Admit (BENCHMARKS.md, sixteenth session). The server answers
// all three protocols on one port, so gRPC tools still reach it.
func New(endpoint string, opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.RetryInitial <= 0 {
		opts.RetryInitial = 500 * time.Millisecond
	}
	if opts.RetryMax < opts.RetryInitial {
		opts.RetryMax = max(30*time.Second, opts.RetryInitial)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	base := endpoint
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	if opts.Name == "" {
		opts.Name = endpoint
	}
	return &Client{
		endpoint: opts.Name,
		opts:     opts,
		svc:      admissionv1connect.NewAdmissionServiceClient(opts.HTTPClient, base, opts.ClientOptions...),
		active:   newActiveSet(),
	}
}

// Admit implements syncloop.Admitter: the pod goes in the Kubernetes
// protobuf encoding, the active pods by the set's digest or by reference
// (in full the first time, see activeSet); the call is bounded by the
// timeout. When the server does not hold the set or some referred pods (it
// restarted), it is sent the references, then those pods in full. Every
// failure (unreachable, timed out, refused request) wraps
// syncloop.ErrAdmissionUnavailable: no decision was made.
func (c *Client) Admit(ctx context.Context, pod *v1.Pod, active []*v1.Pod) (syncloop.AdmitResult, error) {
	var again resend
	for {
		req, err := c.active.prepare([]*v1.Pod{pod}, active, again)
		if err != nil {
			return syncloop.AdmitResult{}, err
		}
		resp, err := c.admit(ctx, &admissionv1.AdmitRequest{Pod: req.pods[0], Active: req.active, ActiveSet: req.set[:], ActiveChange: req.change})
		if err != nil {
			var ok bool
			if again, ok = retry(err, again); ok {
				continue
			}
			return syncloop.AdmitResult{}, c.unavailable(err)
		}
		c.active.acknowledge(req, resp.GetActiveSetHeld())
		return admitResult(resp), nil
	}
}

func (c *Client) admit(ctx context.Context, req *admissionv1.AdmitRequest) (*admissionv1.AdmitResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	resp, err := c.svc.Admit(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}

func (c *Client) unavailable(err error) error {
	return fmt.Errorf("%w: admission at %s: %w", syncloop.ErrAdmissionUnavailable, c.endpoint, err)
}

func admitResult(m *admissionv1.AdmitResponse) syncloop.AdmitResult {
	res := syncloop.AdmitResult{
		Admit: m.GetAdmit(), Reason: m.GetReason(), Message: m.GetMessage(),
		VictimReason: m.GetVictimReason(), VictimMessage: m.GetVictimMessage(),
	}
	for _, v := range m.GetVictims() {
		res.Victims = append(res.Victims, podRef(v))
	}
	return res
}

func podRef(r *admissionv1.PodRef) syncloop.PodRef {
	return syncloop.PodRef{Namespace: r.GetNamespace(), Name: r.GetName(), UID: types.UID(r.GetUid())}
}
