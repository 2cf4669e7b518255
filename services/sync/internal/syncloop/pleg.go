package syncloop

import (
	"context"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/logctx"
)

// pleg is the pod lifecycle event generator. It wakes a pod's worker when
// the runtime reports a change of the pod's containers or sandboxes, from two
// sources: the runtime's GetContainerEvents stream where implemented (the
// kubelet's EventedPLEG), and a relist every interval that diffs sandbox and
// container states (the kubelet's GenericPLEG), which is the only source on
// runtimes without events (containerd 1.6) and the safety net otherwise.
type pleg struct {
	rt       runtimeapi.RuntimeServiceClient
	interval time.Duration
	metrics  *Metrics
	events   chan types.UID

	// last is the state of every sandbox and container at the previous
	// relist, keyed by ID.
	last map[string]plegRecord
}

type plegRecord struct {
	uid   types.UID
	state int32
}

func newPLEG(rt runtimeapi.RuntimeServiceClient, interval time.Duration, metrics *Metrics) *pleg {
	return &pleg{rt: rt, interval: interval, metrics: metrics, events: make(chan types.UID, 1024), last: map[string]plegRecord{}}
}

// Events carries the UIDs of pods with a lifecycle change.
func (g *pleg) Events() <-chan types.UID { return g.events }

// Run relists every interval and follows the event stream until ctx ends.
func (g *pleg) Run(ctx context.Context) {
	go g.watchEvents(ctx)
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		g.relist(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// relist lists every sandbox and container and reports the pods whose
// members appeared, changed state or disappeared. Matches the kubelet's
// GenericPLEG.Relist, including kubelet_pleg_relist_duration_seconds and the
// running pod and container gauges it updates.
func (g *pleg) relist(ctx context.Context) {
	start := time.Now()
	defer func() { g.metrics.PLEGRelistDuration.Observe(time.Since(start).Seconds()) }()
	log := logctx.From(ctx)
	sandboxes, err := g.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		log.Warn("relist: cannot list sandboxes", zap.Error(err))
		return
	}
	containers, err := g.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		log.Warn("relist: cannot list containers", zap.Error(err))
		return
	}
	now := make(map[string]plegRecord, len(sandboxes.GetItems())+len(containers.GetContainers()))
	runningPods := 0
	for _, sb := range sandboxes.GetItems() {
		uid := types.UID(sb.GetLabels()[kuberuntime.KubernetesPodUIDLabel])
		if uid == "" {
			continue
		}
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			runningPods++
		}
		now[sb.GetId()] = plegRecord{uid: uid, state: int32(sb.GetState())}
	}
	byState := map[string]int{}
	for _, c := range containers.GetContainers() {
		uid := types.UID(c.GetLabels()[kuberuntime.KubernetesPodUIDLabel])
		if uid == "" {
			continue
		}
		byState[containerStateLabel(c.GetState())]++
		now[c.GetId()] = plegRecord{uid: uid, state: int32(c.GetState()) + 100}
	}
	g.metrics.RunningPods.Set(float64(runningPods))
	for _, s := range []string{"created", "running", "exited", "unknown"} {
		g.metrics.RunningContainers.WithLabelValues(s).Set(float64(byState[s]))
	}

	changed := map[types.UID]bool{}
	for id, rec := range now {
		if old, ok := g.last[id]; !ok || old.state != rec.state {
			changed[rec.uid] = true
		}
	}
	for id, rec := range g.last {
		if _, ok := now[id]; !ok {
			changed[rec.uid] = true
		}
	}
	g.last = now
	for uid := range changed {
		g.send(ctx, uid)
	}
}

func containerStateLabel(s runtimeapi.ContainerState) string {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return "created"
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return "running"
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return "exited"
	}
	return "unknown"
}

func (g *pleg) send(ctx context.Context, uid types.UID) {
	select {
	case g.events <- uid:
	case <-ctx.Done():
	}
}

// watchEvents follows GetContainerEvents, reconnecting after errors. A
// runtime that does not implement it (Unimplemented) leaves relisting alone.
func (g *pleg) watchEvents(ctx context.Context) {
	log := logctx.From(ctx)
	for ctx.Err() == nil {
		stream, err := g.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
		if err == nil {
			for {
				var ev *runtimeapi.ContainerEventResponse
				ev, err = stream.Recv()
				if err != nil {
					break
				}
				if uid := types.UID(ev.GetPodSandboxStatus().GetMetadata().GetUid()); uid != "" {
					g.send(ctx, uid)
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.Unimplemented {
			log.Info("runtime has no container events, relying on relist", zap.Duration("relistInterval", g.interval))
			return
		}
		log.Warn("container event stream ended, reconnecting", zap.Error(err))
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}
