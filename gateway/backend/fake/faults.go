package fake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
)

// faults holds the injected faults. It has its own lock so that a slow
// (latency) fault never holds the state lock.
type faults struct {
	mu           sync.Mutex
	rng          *rand.Rand
	list         []fault
	pullFailures []*regexp.Regexp
	// any is len(list) > 0, read without mu so that the calls of a runtime
	// without faults, nearly all of them, do not all take one lock.
	any atomic.Bool
}

type fault struct {
	pb      *gatewayv1.Fault
	code    codes.Code
	latency time.Duration
}

func newFaults(rng *rand.Rand) *faults { return &faults{rng: rng} }

// SetFaults replaces the injected faults. Unknown code names, rates outside
// [0, 1] and bad regular expressions are InvalidArgument and change nothing.
func (r *Runtime) SetFaults(ctx context.Context, req *gatewayv1.SetFaultsRequest) (*gatewayv1.SetFaultsResponse, error) {
	list := make([]fault, 0, len(req.GetFaults()))
	for i, f := range req.GetFaults() {
		if f.GetMethod() == "" {
			return nil, fmt.Errorf("faults[%d]: method is required (a CRI method name or \"*\"): %w", i, errdefs.ErrInvalidArgument)
		}
		if rate := f.GetErrorRate(); rate < 0 || rate > 1 {
			return nil, fmt.Errorf("faults[%d]: error_rate %v is outside [0, 1]: %w", i, rate, errdefs.ErrInvalidArgument)
		}
		if rate := f.GetHangRate(); rate < 0 || rate > 1 {
			return nil, fmt.Errorf("faults[%d]: hang_rate %v is outside [0, 1]: %w", i, rate, errdefs.ErrInvalidArgument)
		}
		code := codes.Unavailable
		if f.GetCode() != "" {
			c, ok := parseCode(f.GetCode())
			if !ok {
				return nil, fmt.Errorf("faults[%d]: unknown gRPC code %q: %w", i, f.GetCode(), errdefs.ErrInvalidArgument)
			}
			code = c
		}
		var lat time.Duration
		if d := f.GetLatency(); d != nil {
			if err := d.CheckValid(); err != nil || d.AsDuration() < 0 {
				return nil, fmt.Errorf("faults[%d]: bad latency: %w", i, errdefs.ErrInvalidArgument)
			}
			lat = d.AsDuration()
		}
		list = append(list, fault{pb: proto.CloneOf(f), code: code, latency: lat})
	}
	pulls := make([]*regexp.Regexp, 0, len(req.GetPullFailures()))
	for i, p := range req.GetPullFailures() {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("pull_failures[%d]: %v: %w", i, err, errdefs.ErrInvalidArgument)
		}
		pulls = append(pulls, re)
	}
	r.faults.mu.Lock()
	r.faults.list = list
	r.faults.pullFailures = pulls
	r.faults.any.Store(len(list) > 0)
	r.faults.mu.Unlock()
	r.log(ctx).Info("fake faults set", zap.Int("faults", len(list)), zap.Int("pull_failures", len(pulls)))
	return &gatewayv1.SetFaultsResponse{}, nil
}

// GetFaults returns the faults in force.
func (r *Runtime) GetFaults(ctx context.Context, _ *gatewayv1.GetFaultsRequest) (*gatewayv1.GetFaultsResponse, error) {
	r.faults.mu.Lock()
	defer r.faults.mu.Unlock()
	resp := &gatewayv1.GetFaultsResponse{}
	for _, f := range r.faults.list {
		resp.Faults = append(resp.Faults, proto.CloneOf(f.pb))
	}
	for _, re := range r.faults.pullFailures {
		resp.PullFailures = append(resp.PullFailures, re.String())
	}
	return resp, nil
}

// inject applies the faults matching method at the start of an RPC: it
// waits out their latency (or the caller's deadline); with each fault's
// error rate, returns a gRPC status error with the fault's code; with its
// hang rate, waits for the caller to give up.
func (r *Runtime) inject(ctx context.Context, method string) error {
	if !r.faults.any.Load() {
		return nil
	}
	r.faults.mu.Lock()
	var (
		delay time.Duration
		fail  *fault
		hang  bool
	)
	for i := range r.faults.list {
		f := &r.faults.list[i]
		if f.pb.GetMethod() != method && f.pb.GetMethod() != "*" {
			continue
		}
		delay += f.latency
		// Draw for every matching fault so the sequence of draws, and so the
		// test outcome, depends only on the seed and the calls made.
		if r.faults.rng.Float64() < f.pb.GetErrorRate() && fail == nil {
			fail = f
		}
		if f.pb.GetHangRate() > 0 && r.faults.rng.Float64() < f.pb.GetHangRate() {
			hang = true
		}
	}
	r.faults.mu.Unlock()

	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	if fail == nil && hang {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	if fail == nil {
		return nil
	}
	msg := fail.pb.GetMessage()
	if msg == "" {
		msg = fmt.Sprintf("fake: injected %s fault for %s", fail.code, method)
	}
	return status.Error(fail.code, msg)
}

// pullFails reports whether a pull of ref must fail.
func (r *Runtime) pullFails(ref string) bool {
	r.faults.mu.Lock()
	defer r.faults.mu.Unlock()
	for _, re := range r.faults.pullFailures {
		if re.MatchString(ref) {
			return true
		}
	}
	return false
}

// parseCode accepts a gRPC code by its Go name ("Unavailable",
// "DeadlineExceeded") or its proto name ("UNAVAILABLE", "DEADLINE_EXCEEDED"),
// in any case.
func parseCode(name string) (codes.Code, bool) {
	want := strings.ToLower(strings.ReplaceAll(name, "_", ""))
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if strings.ToLower(c.String()) == want {
			return c, true
		}
	}
	if want == "cancelled" {
		return codes.Canceled, true
	}
	return 0, false
}
