package harness

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/splitlet/splitlet/internal/logctx"
	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// directSide issues, per pod, the CRI calls sync's SyncPod issues for a new
// one-container pod, in its order (kuberuntime createPodSandbox, then
// startContainer with ensureImageExists and containerConfig): RunPodSandbox,
// PodSandboxStatus, ImageStatus (PullImage if absent; the image is present
// here, so its user comes from that same answer), CreateContainer,
// StartContainer; then
// ContainerStatus until RUNNING. The directories and files sync creates on
// the way (pod and container log directories, the termination message
// file) are created too, at the same points.
type directSide struct {
	cfg CtrConfig
	rt  runtimeapi.RuntimeServiceClient
	img runtimeapi.ImageServiceClient
	dns *runtimeapi.DNSConfig
}

// podTimes are one pod's instants.
type podTimes struct {
	start, returned, running, startedAt time.Time
}

// run starts n pods in the mode, measures them, and removes them.
func (d *directSide) run(ctx context.Context, mode string, round, n int) SideRun {
	r := SideRun{Side: SideDirect, Mode: mode, Round: round, RPCSource: "client", Load: LoadAvg()}
	dir, err := os.MkdirTemp(d.cfg.WorkDir, fmt.Sprintf("splitlet-bench-direct-%s-%d-", mode, round))
	if err != nil {
		r.fail(err)
		return r
	}
	defer func() {
		r.fail(cleanRuntime(ctx, d.rt))
		if !d.cfg.Keep && len(r.Errors) == 0 {
			_ = os.RemoveAll(dir)
		}
	}()
	names := ctrPodNames(SideDirect, mode, round, n)
	timer := newRPCTimer()
	rctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	var (
		mu    sync.Mutex
		times = make(map[string]podTimes, n)
		errs  []error
	)
	one := func(name string) {
		p := directPod{Name: name, UID: newUID(), Image: d.cfg.Image, HostNetwork: d.cfg.HostNetwork,
			LogsRoot: filepath.Join(dir, "logs"), PodsDir: filepath.Join(dir, "pods"),
			TermFile: fmt.Sprintf("%08x", rand.Uint32()), DNS: d.dns, Seen: time.Now()}
		pt, err := d.startPod(rctx, timer, p)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			return
		}
		times[name] = pt
	}
	if mode == ModeConcurrent {
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Go(func() { one(name) })
		}
		wg.Wait()
	} else {
		for _, name := range names {
			one(name)
		}
	}
	for i, err := range errs {
		if i == 3 {
			r.fail(fmt.Errorf("%d more errors", len(errs)-3))
			break
		}
		r.fail(err)
	}

	starts, returned, running, startedAt := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	for name, pt := range times {
		starts[name], returned[name], running[name], startedAt[name] = pt.start, pt.returned, pt.running, pt.startedAt
	}
	ds, missing := perPod(names, starts, startedAt)
	r.RuntimeStart = summarize(ds, missing)
	ds, missing = perPod(names, starts, running)
	r.Running = summarize(ds, missing)
	ds, missing = perPod(names, starts, returned)
	ret := summarize(ds, missing)
	r.StartReturned = &ret
	r.WallRuntimeStart = wallSeconds(names, starts, startedAt)
	r.WallRunning = wallSeconds(names, starts, running)
	r.RPCs = timer.stats()
	logctx.From(ctx).Info("direct run done", zap.String("mode", mode), zap.Int("round", round), zap.Int("pods", len(times)))
	return r
}

// startPod runs one pod's calls and returns its instants. The start is
// taken before the pod's log directory is made, as sync makes it just
// before RunPodSandbox.
func (d *directSide) startPod(ctx context.Context, timer *rpcTimer, p directPod) (podTimes, error) {
	var pt podTimes
	pt.start = time.Now()
	sbConfig := sandboxConfig(p)
	if err := os.MkdirAll(sbConfig.GetLogDirectory(), 0o755); err != nil {
		return pt, err
	}
	var sandboxID string
	if err := timer.time("RunPodSandbox", func() error {
		resp, err := d.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbConfig})
		sandboxID = resp.GetPodSandboxId()
		return err
	}); err != nil {
		return pt, fmt.Errorf("RunPodSandbox: %w", err)
	}
	if err := timer.time("PodSandboxStatus", func() error {
		_, err := d.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID})
		return err
	}); err != nil {
		return pt, fmt.Errorf("PodSandboxStatus: %w", err)
	}
	// sync takes the image's user from this ImageStatus too; it asks
	// again only after a pull (containerConfig).
	imageRef, err := d.ensureImage(ctx, timer, p.Image, sbConfig)
	if err != nil {
		return pt, err
	}
	if err := os.MkdirAll(filepath.Join(sbConfig.GetLogDirectory(), ctrContainerName), 0o755); err != nil {
		return pt, err
	}
	if err := createTermFile(p.termMessagePath()); err != nil {
		return pt, err
	}
	var containerID string
	if err := timer.time("CreateContainer", func() error {
		resp, err := d.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId: sandboxID, Config: containerConfig(p, imageRef), SandboxConfig: sbConfig,
		})
		containerID = resp.GetContainerId()
		return err
	}); err != nil {
		return pt, fmt.Errorf("CreateContainer: %w", err)
	}
	if err := timer.time("StartContainer", func() error {
		_, err := d.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: containerID})
		return err
	}); err != nil {
		return pt, fmt.Errorf("StartContainer: %w", err)
	}
	pt.returned = time.Now()
	for {
		var st *runtimeapi.ContainerStatus
		if err := timer.time("ContainerStatus", func() error {
			resp, err := d.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: containerID})
			st = resp.GetStatus()
			return err
		}); err != nil {
			return pt, fmt.Errorf("ContainerStatus: %w", err)
		}
		if st.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			pt.running = time.Now()
			pt.startedAt = time.Unix(0, st.GetStartedAt())
			return pt, nil
		}
		select {
		case <-ctx.Done():
			return pt, fmt.Errorf("container not running: %w", ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ensureImage is sync's ensureImageExists for IfNotPresent: ImageStatus,
// and PullImage only when the image is absent.
func (d *directSide) ensureImage(ctx context.Context, timer *rpcTimer, image string, sbConfig *runtimeapi.PodSandboxConfig) (string, error) {
	spec := &runtimeapi.ImageSpec{Image: image}
	var ref string
	if err := timer.time("ImageStatus", func() error {
		resp, err := d.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
		ref = resp.GetImage().GetId()
		return err
	}); err != nil {
		return "", fmt.Errorf("ImageStatus %s: %w", image, err)
	}
	if ref != "" {
		return ref, nil
	}
	if err := timer.time("PullImage", func() error {
		resp, err := d.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec, SandboxConfig: sbConfig})
		ref = resp.GetImageRef()
		return err
	}); err != nil {
		return "", fmt.Errorf("PullImage %s: %w", image, err)
	}
	return ref, nil
}

// createTermFile creates the empty termination message file, writable by
// any container user, as sync's makeTerminationMessageMount does.
func createTermFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(path, 0o666)
}

// newUID returns a random RFC 4122 version 4 UUID, the form of a pod UID.
func newUID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
