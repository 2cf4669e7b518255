package nodeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"go.uber.org/zap"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/stats"
)

// SummaryProvider gives the node's stats Summary (*stats.Provider), the
// kubelet's server/stats.SummaryProvider. Get with updateStats false reads
// cached CPU rates, as every request to the node API does;
// GetCPUAndMemoryStats leaves out filesystems, network and the like. An
// error means no Summary could be built.
type SummaryProvider interface {
	Get(ctx context.Context, updateStats bool) (*statsapi.Summary, error)
	GetCPUAndMemoryStats(ctx context.Context) (*statsapi.Summary, error)
}

var _ SummaryProvider = (*stats.Provider)(nil)

// getStatsSummary answers /stats/summary (GET or POST) with the Summary in
// JSON, only CPU and memory when the query or form says
// only_cpu_and_memory=true; 500 with "Internal Error: ..." when it cannot
// be built. Matches the kubelet's handleSummary: requests use cached
// stats (updateStats false).
func (s *Server) getStatsSummary(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		s.statsError(w, r, fmt.Errorf("parse form failed: %w", err))
		return
	}
	var (
		summary *statsapi.Summary
		err     error
	)
	if v, ok := r.Form["only_cpu_and_memory"]; ok && len(v) == 1 && v[0] == "true" {
		summary, err = s.opts.Stats.GetCPUAndMemoryStats(ctx)
	} else {
		summary, err = s.opts.Stats.Get(ctx, false)
	}
	if err != nil {
		s.statsError(w, r, err)
		return
	}
	data, err := json.Marshal(summary)
	if err != nil {
		s.statsError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(data); err != nil {
		logctx.From(ctx).Info("writing the response failed", zap.Error(err))
	}
}

// statsError is the kubelet's stats handleError for the errors sync has:
// 500 with "Internal Error: <err>".
func (s *Server) statsError(w http.ResponseWriter, r *http.Request, err error) {
	logctx.From(r.Context()).Error("HTTP InternalServerError serving", zap.String("request", "/stats/summary"), zap.Error(err))
	http.Error(w, fmt.Sprintf("Internal Error: %v", err), http.StatusInternalServerError)
}
