package admission

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
)

// fakeGC records the garbage collections a reclaim runs, in order.
type fakeGC struct {
	mu       sync.Mutex
	calls    []string
	freed    int64
	imageErr error
}

func (f *fakeGC) DeleteAllUnusedContainers(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "containers")
	return nil
}

func (f *fakeGC) DeleteUnusedImages(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "images")
	return f.freed, f.imageErr
}

func (f *fakeGC) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// A reclaim request on the eviction stream runs the garbage collections it
// names, containers before images, and is answered with ReportReclaim
// carrying its id, the bytes freed and any failure; an eviction after it
// is still carried out.
func TestWatchEvictionsRunsReclaims(t *testing.T) {
	tests := []struct {
		desc       string
		req        *admissionv1.ReclaimRequest
		imageErr   error
		wantCalls  []string
		wantFreed  int64
		wantErrMsg string
	}{
		{
			desc:      "containers then images",
			req:       &admissionv1.ReclaimRequest{Id: "r1", Signal: "imagefs.available", Containers: true, Images: true},
			wantCalls: []string{"containers", "images"},
			wantFreed: 4096,
		},
		{
			desc:      "containers only",
			req:       &admissionv1.ReclaimRequest{Id: "r2", Signal: "nodefs.available", Containers: true},
			wantCalls: []string{"containers"},
		},
		{
			desc:       "a failure is reported, with what was freed before it",
			req:        &admissionv1.ReclaimRequest{Id: "r3", Signal: "imagefs.available", Containers: true, Images: true},
			imageErr:   errors.New("remove image sha256:a: in use"),
			wantCalls:  []string{"containers", "images"},
			wantFreed:  4096,
			wantErrMsg: "delete unused images: remove image sha256:a: in use",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			svc := &fakeService{
				evictions: make(chan *admissionv1.WatchEvictionsResponse, 2),
				reports:   make(chan *admissionv1.ReportReclaimRequest, 1),
			}
			svc.evictions <- &admissionv1.WatchEvictionsResponse{Reclaim: tc.req}
			svc.evictions <- &admissionv1.WatchEvictionsResponse{Pod: &admissionv1.PodRef{Namespace: "default", Name: "after"}}
			gc := &fakeGC{freed: 4096, imageErr: tc.imageErr}
			c := New(serve(t, svc), Options{})
			ev := &fakeEvictor{got: make(chan eviction, 1)}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { c.WatchEvictions(ctx, ev, NodeGC{Containers: gc, Images: gc}); close(done) }()
			defer func() { cancel(); <-done }()

			var report *admissionv1.ReportReclaimRequest
			select {
			case report = <-svc.reports:
			case <-time.After(10 * time.Second):
				t.Fatal("no ReportReclaim")
			}
			if report.GetId() != tc.req.GetId() || report.GetImageBytesFreed() != tc.wantFreed ||
				!strings.Contains(report.GetError(), tc.wantErrMsg) || (tc.wantErrMsg == "") != (report.GetError() == "") {
				t.Errorf("report = %+v, want id %s, %d bytes, error %q", report, tc.req.GetId(), tc.wantFreed, tc.wantErrMsg)
			}
			if got := gc.called(); !slices.Equal(got, tc.wantCalls) {
				t.Errorf("ran %v, want %v", got, tc.wantCalls)
			}
			select {
			case e := <-ev.got:
				if e.ref.Name != "after" {
					t.Errorf("evicted %s, want after", e.ref.Name)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the eviction after the reclaim request was not carried out")
			}
		})
	}
}
