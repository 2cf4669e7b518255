package podstats

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
)

// fakeRuntime is a hand-written CRI RuntimeService answering only the
// calls the provider makes (ListPodSandbox, ListPodSandboxStats, Status).
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	sandboxes []*runtimeapi.PodSandbox
	stats     []*runtimeapi.PodSandboxStats
	err       error
	status    *runtimeapi.StatusResponse
}

func (f *fakeRuntime) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.status, nil
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []*runtimeapi.PodSandbox
	for _, s := range f.sandboxes {
		if st := req.GetFilter().GetState(); st != nil && st.State != s.State {
			continue
		}
		out = append(out, s)
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func (f *fakeRuntime) ListPodSandboxStats(context.Context, *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: f.stats}, nil
}

// serve runs rt on a unix socket and returns its path.
func serve(t *testing.T, rt *fakeRuntime) string {
	t.Helper()
	return testfixture.ServeCRI(t, rt)
}

func sandbox(id, uid string, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: state, Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "ns", Uid: uid}}
}

func sandboxStats(id, uid string, workingSet, procs, rootfs uint64) *runtimeapi.PodSandboxStats {
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{Id: id, Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "ns", Uid: uid}},
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Memory:  &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: workingSet}},
			Process: &runtimeapi.ProcessUsage{ProcessCount: &runtimeapi.UInt64Value{Value: procs}},
			Containers: []*runtimeapi.ContainerStats{{
				Attributes:    &runtimeapi.ContainerAttributes{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}},
				Memory:        &runtimeapi.MemoryUsage{WorkingSetBytes: &runtimeapi.UInt64Value{Value: workingSet / 2}},
				WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: rootfs}},
			}},
		},
	}
}

func TestListPodStats(t *testing.T) {
	ready, notReady := runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	tests := []struct {
		desc     string
		endpoint func(sock string) string
		rt       *fakeRuntime
		want     []string // uid:workingSet:procs:containerRootfs
		wantErr  error
	}{
		{
			desc:     "ready sandboxes only, old sandbox of a pod skipped; unix:// URL",
			endpoint: func(s string) string { return "unix://" + s },
			rt: &fakeRuntime{
				sandboxes: []*runtimeapi.PodSandbox{sandbox("old-a", "a", notReady), sandbox("new-a", "a", ready), sandbox("b", "b", ready)},
				stats: []*runtimeapi.PodSandboxStats{
					sandboxStats("old-a", "a", 999, 9, 9), sandboxStats("new-a", "a", 100, 3, 7), sandboxStats("b", "b", 200, 1, 0),
				},
			},
			want: []string{"a:100:3:7", "b:200:1:0"},
		},
		{
			desc:     "stats without values are zero; bare socket path",
			endpoint: func(s string) string { return s },
			rt: &fakeRuntime{
				sandboxes: []*runtimeapi.PodSandbox{sandbox("c", "c", ready)},
				stats: []*runtimeapi.PodSandboxStats{{
					Attributes: &runtimeapi.PodSandboxAttributes{Id: "c", Metadata: &runtimeapi.PodSandboxMetadata{Uid: "c"}},
				}},
			},
			want: []string{"c:0:0:-"},
		},
		{
			desc:     "gateway unavailable",
			endpoint: func(s string) string { return s },
			rt:       &fakeRuntime{err: status.Error(codes.Unavailable, "runtime down")},
			wantErr:  errdefs.ErrUnavailable,
		},
		{
			desc:     "other errors are unknown",
			endpoint: func(s string) string { return s },
			rt:       &fakeRuntime{err: status.Error(codes.Internal, "boom")},
			wantErr:  errdefs.ErrUnknown,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p, err := Dial(tc.endpoint(serve(t, tc.rt)))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			got, err := p.ListPodStats(context.Background())
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var summary []string
			for _, ps := range got {
				rootfs := "-"
				if len(ps.Containers) > 0 {
					rootfs = strconv.FormatUint(ps.Containers[0].Rootfs.UsedBytes, 10)
					if ps.Containers[0].Name != "app" {
						t.Errorf("container name %q, want app", ps.Containers[0].Name)
					}
				}
				summary = append(summary, string(ps.UID)+":"+strconv.FormatUint(ps.MemoryWorkingSetBytes, 10)+":"+strconv.FormatUint(ps.ProcessCount, 10)+":"+rootfs)
			}
			slices.Sort(summary)
			if !slices.Equal(summary, tc.want) {
				t.Errorf("stats %v, want %v", summary, tc.want)
			}
		})
	}
}

func TestDialRejectsTCP(t *testing.T) {
	if _, err := Dial("localhost:1234"); !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("Dial(tcp) = %v, want ErrInvalidArgument", err)
	}
}

func TestNodeFeatures(t *testing.T) {
	ready := &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{{Type: runtimeapi.RuntimeReady, Status: true}}}
	notReady := &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{{Type: runtimeapi.RuntimeReady, Status: false}}}
	tests := []struct {
		desc    string
		rt      *fakeRuntime
		want    string // "nil", "true" or "false"
		wantErr error
	}{
		{desc: "supported", rt: &fakeRuntime{status: &runtimeapi.StatusResponse{Status: ready,
			Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true}}}, want: "true"},
		{desc: "features without it", rt: &fakeRuntime{status: &runtimeapi.StatusResponse{Status: ready,
			Features: &runtimeapi.RuntimeFeatures{}}}, want: "false"},
		{desc: "no features (containerd 1.6)", rt: &fakeRuntime{status: &runtimeapi.StatusResponse{Status: ready}}, want: "nil"},
		{desc: "runtime not ready", rt: &fakeRuntime{status: &runtimeapi.StatusResponse{Status: notReady,
			Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true}}}, wantErr: errdefs.ErrUnavailable},
		{desc: "gateway unavailable", rt: &fakeRuntime{err: status.Error(codes.Unavailable, "down")}, wantErr: errdefs.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c, err := Dial(serve(t, tc.rt))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			f, err := c.NodeFeatures(context.Background())
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || f != nil {
					t.Fatalf("NodeFeatures = %v, %v; want nil and %v", f, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := "nil"
			if f != nil {
				got = strconv.FormatBool(f.SupplementalGroupsPolicy != nil && *f.SupplementalGroupsPolicy)
			}
			if got != tc.want {
				t.Fatalf("supplementalGroupsPolicy %s, want %s", got, tc.want)
			}
		})
	}
}
