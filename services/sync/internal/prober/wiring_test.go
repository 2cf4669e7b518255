package prober

import (
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/prober/probe"
)

// The sync process's own types satisfy the interfaces the Manager takes,
// so wiring needs no adapters.
var (
	_ Recorder       = (*events.Recorder)(nil)
	_ StatusProvider = (*podmanager.Manager)(nil)
	_ probe.Execer   = (*kuberuntime.Manager)(nil)
)
