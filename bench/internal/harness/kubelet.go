package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/stack"
	"go.uber.org/zap"
)

// runKubelet is the side-by-side run: the real kubelet, standalone (no API
// server, no kubeconfig), reading n static pod files, against a fresh
// splitlet-gateway with the fake backend. From the moment a pod's manifest
// file was written, it counts as started when the gateway reports its
// container started (StartCRI), and as running when the kubelet's /pods
// on its read-only port says all its containers run (StartWatch, the
// status point, as splitlet's Watch). Deleting is removing the files, done
// when every container has stopped. With cfg.NodeIP (the node network) the
// kubelet gets --node-ip, as a node with a known address has.
func runKubelet(ctx context.Context, cfg Config, n int) (r Result) {
	r = Result{System: "kubelet", N: n, Latency: cfg.Latency.String()}
	log := logctx.From(ctx).With(zap.String("system", r.System), zap.Int("n", n))
	dir, err := runDir(cfg, r.System, n)
	if err != nil {
		r.fail(err)
		return r
	}
	r.Dir = dir
	defer cleanup(ctx, cfg, &r)
	// The kubelet bind-mounts its root directory onto itself and leaves
	// the mount when it stops; unmounted after it stops (the defers below
	// run first), the run directory can be removed.
	defer func() { _ = syscall.Unmount(filepath.Join(dir, "kubelet"), syscall.MNT_DETACH) }()
	st, conn, err := startStack(ctx, cfg, stackOptions{dir: dir, gatewayOnly: true})
	if err != nil {
		r.fail(err)
		return r
	}
	defer st.Stop()
	defer conn.Close()
	socket := st.GatewaySocket

	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		r.fail(err)
		return r
	}
	port, err1 := freePort()
	healthz, err2 := freePort()
	readOnly, err3 := freePort()
	if err1 != nil || err2 != nil || err3 != nil {
		r.fail(fmt.Errorf("free ports: %v, %v, %v", err1, err2, err3))
		return r
	}
	healthzURL := fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz)
	conf := filepath.Join(dir, "kubelet-config.yaml")
	if err := os.WriteFile(conf, []byte(kubeletConfig(manifests, socket, port, healthz, readOnly, n)), 0o644); err != nil {
		r.fail(err)
		return r
	}
	args := append([]string{
		"--config=" + conf,
		"--root-dir=" + filepath.Join(dir, "kubelet"),
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--hostname-override=" + benchNode,
		"--v=1",
	}, cfg.KubeletArgs...)
	if cfg.NodeIP != "" {
		args = append(args, "--node-ip="+cfg.NodeIP)
	}
	kl, err := stack.StartProcess(ctx, "kubelet", cfg.Kubelet, filepath.Join(dir, "kubelet.log"), httpOK(healthzURL), 90*time.Second, args...)
	if err != nil {
		r.fail(err)
		return r
	}
	defer kl.Stop(15 * time.Second)
	procs := append(st.Processes(), kl)

	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	criObs := newCRIObserver(conn, staticPodName(benchNode))
	subscribed := make(chan struct{})
	go criObs.run(octx, subscribed)
	<-subscribed

	names := podNames(n)
	interval := kubeletPodsInterval(cfg, n)
	podsObs := newKubeletPodsObserver(fmt.Sprintf("http://127.0.0.1:%d/pods", readOnly), interval, staticPodName(benchNode))
	if interval > 0 {
		go podsObs.run(octx, names)
		r.Notes = append(r.Notes, fmt.Sprintf("status point: /pods read every %s", interval))
	} else {
		r.Notes = append(r.Notes, "status point not measured (/pods not read); pods/s from the CRI view")
	}
	all := pids(procs)
	cpu0, self0 := cpuSeconds(all), startHarnessCPU()
	log.Info("burst: writing static pod files")
	starts := make(map[string]time.Time, n)
	t0 := time.Now()
	for _, name := range names {
		starts[name] = time.Now()
		if err := writeManifest(manifests, name); err != nil {
			r.fail(err)
			return r
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, cfg.Timeout)
	r.fail(criObs.started.wait(wctx, names))
	if interval > 0 {
		r.fail(podsObs.running.wait(wctx, names))
	}
	wcancel()
	r.BurstCPUSeconds = diffCPU(cpuSeconds(all), cpu0)
	recordHarnessCPU(&r, self0)
	ds, missing := durations(names, starts, criObs.started)
	r.StartCRI = summarize(ds, missing)
	// pods/s on the status view, as splitlet's (its Watch); the CRI view
	// when /pods was not read or never showed every pod.
	burstView, statusMissing := criObs.started, missing
	if interval > 0 {
		ds, sm := durations(names, starts, podsObs.running)
		status := summarize(ds, sm)
		r.StartWatch = &status
		if sm == 0 {
			burstView, statusMissing = podsObs.running, 0
		} else {
			r.Notes = append(r.Notes, "pods/s from the CRI view: /pods did not show every pod running")
		}
	}
	if last := latest(names, burstView); !last.IsZero() {
		r.BurstSeconds = last.Sub(t0).Seconds()
		if statusMissing == 0 {
			r.PodsPerSec = float64(n) / r.BurstSeconds
		}
	}
	if err := checkAlive(procs); err != nil {
		r.fail(err)
		return r
	}

	if cfg.Steady > 0 {
		log.Info("steady state", zap.Duration("window", cfg.Steady))
		r.Steady, err = sampleWindow(ctx, all, cfg.Steady, time.Second)
		if err != nil {
			r.fail(err)
			return r
		}
		r.SteadySeconds = cfg.Steady.Seconds()
		r.SteadyTotal = sumUsage(r.Steady)
	}

	log.Info("deleting pods: removing static pod files")
	t1 := time.Now()
	for _, name := range names {
		if err := os.Remove(filepath.Join(manifests, name+".json")); err != nil {
			r.fail(err)
		}
	}
	wctx, wcancel = context.WithTimeout(ctx, cfg.Timeout)
	r.fail(criObs.stopped.wait(wctx, names))
	wcancel()
	if last := latest(names, criObs.stopped); !last.IsZero() {
		r.DeleteCRISeconds = last.Sub(t1).Seconds()
	}
	r.fail(checkAlive(procs))
	return r
}

// writeManifest writes name's static pod file atomically: the kubelet's
// file source skips dot files, so it never reads a half-written one.
func writeManifest(dir, name string) error {
	tmp := filepath.Join(dir, "."+name+".json")
	if err := os.WriteFile(tmp, []byte(podManifest(name)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name+".json"))
}

// kubeletConfig is the standalone kubelet's KubeletConfiguration. Most of
// it exists because this machine has cgroup v1 (refused unless
// failCgroupV1 is false, settable only here), no systemd and no API
// server (no webhook authentication or authorization to ask).
func kubeletConfig(manifests, socket string, port, healthz, readOnly, n int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
containerRuntimeEndpoint: unix://%s
runtimeRequestTimeout: 2m
maxPods: %d
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupDriver: cgroupfs
# Hard eviction off, as for splitlet-admission: the shared machine's disk
# must not evict bench pods.
evictionHard: {}
localStorageCapacityIsolation: false
address: 127.0.0.1
port: %d
# The read-only port serves /pods, the bench's view of pod status.
readOnlyPort: %d
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
`, manifests, socket, n+10, port, readOnly, healthz)
}
