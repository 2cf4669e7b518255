package kuberuntime

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CgroupDriver is how the runtime manages cgroups, which decides how pod
// cgroups are named: the kubelet's cgroupDriver, cgroupfs or systemd.
type CgroupDriver string

// The kubelet's two cgroup drivers.
const (
	CgroupfsDriver CgroupDriver = "cgroupfs"
	SystemdDriver  CgroupDriver = "systemd"
)

// PodCgroupParent names pods' cgroups the driver's way.
func (d CgroupDriver) PodCgroupParent() CgroupParentFunc {
	if d == SystemdDriver {
		return SystemdPodCgroupParent
	}
	return CgroupfsPodCgroupParent
}

// PodCgroupRoot is the cgroup every pod's cgroup is below (the kubelet's
// GetPodCgroupRoot with the default cgroup root).
func (d CgroupDriver) PodCgroupRoot() string {
	if d == SystemdDriver {
		return "/kubepods.slice"
	}
	return "/kubepods"
}

// SystemdPodCgroupParent names a pod's cgroup the way the kubelet does with
// the systemd driver (CgroupName.ToSystemd of podContainerManagerImpl.
// GetPodContainerName's name): the cgroupfs names' levels become nested
// slices, each named after all the levels above it, with the dashes of a
// level (the pod UID's) escaped to underscores:
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice.
// A runtime on the systemd driver (containerd with SystemdCgroup) puts the
// sandbox's scope in the last slice.
func SystemdPodCgroupParent(pod *v1.Pod, class v1.PodQOSClass) string {
	levels := []string{"kubepods"}
	switch class {
	case v1.PodQOSBurstable:
		levels = append(levels, "burstable")
	case v1.PodQOSBestEffort:
		levels = append(levels, "besteffort")
	}
	levels = append(levels, "pod"+string(pod.UID))
	var b strings.Builder
	prefix := ""
	for _, level := range levels {
		prefix += strings.ReplaceAll(level, "-", "_")
		b.WriteString("/" + prefix + ".slice")
		prefix += "-"
	}
	return b.String()
}

// RuntimeConfigClient is the part of CRI the cgroup driver comes from.
type RuntimeConfigClient interface {
	RuntimeConfig(ctx context.Context, in *runtimeapi.RuntimeConfigRequest, opts ...grpc.CallOption) (*runtimeapi.RuntimeConfigResponse, error)
}

// runtimeConfigAttempt bounds one RuntimeConfig call, so that one lost to
// a runtime starting up is retried rather than waited out.
const runtimeConfigAttempt = 2 * time.Second

// DetectCgroupDriver asks the runtime which cgroup driver it uses (CRI
// RuntimeConfig), as the kubelet's getCgroupDriverFromCRI does at start
// (KubeletCgroupDriverFromCRI, GA): a runtime that does not implement the
// call (containerd before 2.0) leaves fallback, the configured driver; an
// unknown driver is an error. Other errors are retried every retryDelay
// until ctx ends, then returned; the kubelet gives up after three tries,
// but sync may start while its gateway does.
func DetectCgroupDriver(ctx context.Context, rt RuntimeConfigClient, fallback CgroupDriver, retryDelay time.Duration) (CgroupDriver, error) {
	for {
		attempt, cancel := context.WithTimeout(ctx, runtimeConfigAttempt)
		resp, err := rt.RuntimeConfig(attempt, &runtimeapi.RuntimeConfigRequest{})
		cancel()
		if err == nil {
			linux := resp.GetLinux()
			if linux == nil {
				return fallback, nil
			}
			switch d := linux.GetCgroupDriver(); d {
			case runtimeapi.CgroupDriver_SYSTEMD:
				return SystemdDriver, nil
			case runtimeapi.CgroupDriver_CGROUPFS:
				return CgroupfsDriver, nil
			default:
				return "", fmt.Errorf("runtime returned an unknown cgroup driver %d", d)
			}
		}
		if status.Code(err) == codes.Unimplemented {
			return fallback, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("asking the runtime for its cgroup driver: %w", err)
		case <-time.After(retryDelay):
		}
	}
}
