package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

// countingSource counts the manifests it is given.
type countingSource struct {
	notFoundSource
	applied atomic.Int32
}

func (c *countingSource) Apply(context.Context, []byte, bool) ([]source.AppliedPod, error) {
	c.applied.Add(1)
	return nil, nil
}

// An Apply over MaxRequestBytes is refused with ResourceExhausted before
// it reaches the source; one under it goes through.
func TestApplyOverTheRequestLimitIsRefused(t *testing.T) {
	src := &countingSource{}
	mux := http.NewServeMux()
	mux.Handle(NewHandler(New(src, nil, nil, nil)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := podv1connect.NewPodServiceClient(srv.Client(), srv.URL)

	big := "# " + strings.Repeat("x", MaxRequestBytes) + "\n"
	_, err := client.Apply(t.Context(), connect.NewRequest(&podv1.ApplyRequest{Manifest: big}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "larger than configured max") {
		t.Fatalf("Apply of %d bytes: %v, want ResourceExhausted naming the limit", len(big), err)
	}
	if n := src.applied.Load(); n != 0 {
		t.Fatalf("the oversized manifest reached the source (%d applies)", n)
	}
	if _, err := client.Apply(t.Context(), connect.NewRequest(&podv1.ApplyRequest{Manifest: big[:MaxRequestBytes/2]})); err != nil {
		t.Fatalf("Apply of %d bytes: %v", MaxRequestBytes/2, err)
	}
	if n := src.applied.Load(); n != 1 {
		t.Fatalf("%d applies, want the one under the limit", n)
	}
}
