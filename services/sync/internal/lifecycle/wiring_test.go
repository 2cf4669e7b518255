// An external test package: kuberuntime will import lifecycle to run
// hooks, so only a lifecycle_test package may import kuberuntime.
package lifecycle_test

import (
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/lifecycle"
)

// The sync process's own types satisfy the interfaces the HandlerRunner
// takes, so wiring needs no adapters.
var (
	_ lifecycle.Recorder          = (*events.Recorder)(nil)
	_ lifecycle.PodStatusProvider = (*kuberuntime.Manager)(nil)
)
