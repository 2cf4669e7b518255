package kuberuntime

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's names for the pod cgroup of each QoS class, with either
// driver (its CgroupName.ToSystemd example for the systemd one).
func TestPodCgroupParent(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "1234-abcd-5678-efgh"}}
	for _, tc := range []struct {
		class    v1.PodQOSClass
		cgroupfs string
		systemd  string
	}{
		{v1.PodQOSGuaranteed, "/kubepods/pod1234-abcd-5678-efgh", "/kubepods.slice/kubepods-pod1234_abcd_5678_efgh.slice"},
		{v1.PodQOSBurstable, "/kubepods/burstable/pod1234-abcd-5678-efgh",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd_5678_efgh.slice"},
		{v1.PodQOSBestEffort, "/kubepods/besteffort/pod1234-abcd-5678-efgh",
			"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234_abcd_5678_efgh.slice"},
	} {
		if got := CgroupfsDriver.PodCgroupParent()(pod, tc.class); got != tc.cgroupfs {
			t.Errorf("cgroupfs, %s: %q, want %q", tc.class, got, tc.cgroupfs)
		}
		if got := SystemdDriver.PodCgroupParent()(pod, tc.class); got != tc.systemd {
			t.Errorf("systemd, %s: %q, want %q", tc.class, got, tc.systemd)
		}
	}
	if CgroupfsDriver.PodCgroupRoot() != "/kubepods" || SystemdDriver.PodCgroupRoot() != "/kubepods.slice" {
		t.Errorf("pod cgroup roots %q and %q", CgroupfsDriver.PodCgroupRoot(), SystemdDriver.PodCgroupRoot())
	}
}

// runtimeConfigs answers RuntimeConfig with its replies in turn, the last
// one from then on.
type runtimeConfigs struct {
	replies []func() (*runtimeapi.RuntimeConfigResponse, error)
	calls   atomic.Int32
}

func (r *runtimeConfigs) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest, ...grpc.CallOption) (*runtimeapi.RuntimeConfigResponse, error) {
	i := int(r.calls.Add(1)) - 1
	return r.replies[min(i, len(r.replies)-1)]()
}

func driverReply(d runtimeapi.CgroupDriver) func() (*runtimeapi.RuntimeConfigResponse, error) {
	return func() (*runtimeapi.RuntimeConfigResponse, error) {
		return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: d}}, nil
	}
}

func errReply(code codes.Code) func() (*runtimeapi.RuntimeConfigResponse, error) {
	return func() (*runtimeapi.RuntimeConfigResponse, error) { return nil, status.Error(code, "no") }
}

// DetectCgroupDriver follows the kubelet's getCgroupDriverFromCRI: the
// runtime's driver wins, a runtime without RuntimeConfig (or without its
// Linux part) leaves the configured one, transient errors are retried.
func TestDetectCgroupDriver(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		replies   []func() (*runtimeapi.RuntimeConfigResponse, error)
		fallback  CgroupDriver
		want      CgroupDriver
		wantCalls int32
		wantErr   string
	}{
		{desc: "the runtime's systemd", replies: []func() (*runtimeapi.RuntimeConfigResponse, error){driverReply(runtimeapi.CgroupDriver_SYSTEMD)},
			fallback: CgroupfsDriver, want: SystemdDriver, wantCalls: 1},
		{desc: "the runtime's cgroupfs", replies: []func() (*runtimeapi.RuntimeConfigResponse, error){driverReply(runtimeapi.CgroupDriver_CGROUPFS)},
			fallback: SystemdDriver, want: CgroupfsDriver, wantCalls: 1},
		{desc: "no RuntimeConfig: the configured driver", replies: []func() (*runtimeapi.RuntimeConfigResponse, error){errReply(codes.Unimplemented)},
			fallback: SystemdDriver, want: SystemdDriver, wantCalls: 1},
		{desc: "no Linux part: the configured driver", replies: []func() (*runtimeapi.RuntimeConfigResponse, error){
			func() (*runtimeapi.RuntimeConfigResponse, error) { return &runtimeapi.RuntimeConfigResponse{}, nil }},
			fallback: CgroupfsDriver, want: CgroupfsDriver, wantCalls: 1},
		{desc: "a runtime starting up", replies: []func() (*runtimeapi.RuntimeConfigResponse, error){
			errReply(codes.Unavailable), errReply(codes.DeadlineExceeded), driverReply(runtimeapi.CgroupDriver_SYSTEMD)},
			fallback: CgroupfsDriver, want: SystemdDriver, wantCalls: 3},
		{desc: "an unknown driver", replies: []func() (*runtimeapi.RuntimeConfigResponse, error){driverReply(runtimeapi.CgroupDriver(7))},
			fallback: CgroupfsDriver, wantCalls: 1, wantErr: "runtime returned an unknown cgroup driver 7"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := &runtimeConfigs{replies: tc.replies}
			got, err := DetectCgroupDriver(t.Context(), rt, tc.fallback, time.Millisecond)
			if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("DetectCgroupDriver = %q, %v; want %q, error %q", got, err, tc.want, tc.wantErr)
			}
			if n := rt.calls.Load(); n != tc.wantCalls {
				t.Errorf("%d RuntimeConfig calls, want %d", n, tc.wantCalls)
			}
		})
	}

	// A runtime that never answers: the error once the caller's time is up.
	ctx, cancel := context.WithCancel(t.Context())
	rt := &runtimeConfigs{replies: []func() (*runtimeapi.RuntimeConfigResponse, error){func() (*runtimeapi.RuntimeConfigResponse, error) {
		cancel()
		return nil, status.Error(codes.Unavailable, "connection refused")
	}}}
	if _, err := DetectCgroupDriver(ctx, rt, CgroupfsDriver, time.Hour); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a runtime that never answers: %v, want its error", err)
	}
}
