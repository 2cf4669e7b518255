package syncloop

import (
	"context"
	"sort"
	"strings"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeCRI answers the list calls from its fields; every other method of the
// embedded interface panics if called.
type fakeCRI struct {
	runtimeapi.RuntimeServiceClient
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
}

func (f *fakeCRI) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: f.sandboxes}, nil
}

func (f *fakeCRI) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: f.containers}, nil
}

func ctr(id, uid string, state runtimeapi.ContainerState) *runtimeapi.Container {
	return &runtimeapi.Container{Id: id, State: state, Labels: map[string]string{"io.kubernetes.pod.uid": uid}}
}

func sb(id, uid string, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: state, Labels: map[string]string{"io.kubernetes.pod.uid": uid}}
}

func TestRelistReportsChangedPods(t *testing.T) {
	running, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	ready := runtimeapi.PodSandboxState_SANDBOX_READY
	for _, tc := range []struct {
		desc        string
		before      fakeCRI
		after       fakeCRI
		wantChanged string
	}{
		{
			desc:        "nothing changed",
			before:      fakeCRI{containers: []*runtimeapi.Container{ctr("c1", "a", running)}},
			after:       fakeCRI{containers: []*runtimeapi.Container{ctr("c1", "a", running)}},
			wantChanged: "",
		},
		{
			desc:        "a container exited",
			before:      fakeCRI{containers: []*runtimeapi.Container{ctr("c1", "a", running), ctr("c2", "b", running)}},
			after:       fakeCRI{containers: []*runtimeapi.Container{ctr("c1", "a", exited), ctr("c2", "b", running)}},
			wantChanged: "a",
		},
		{
			desc:        "appeared and disappeared",
			before:      fakeCRI{sandboxes: []*runtimeapi.PodSandbox{sb("s1", "a", ready)}},
			after:       fakeCRI{containers: []*runtimeapi.Container{ctr("c9", "b", running)}},
			wantChanged: "a,b",
		},
		{
			desc:        "unlabelled containers are not ours to report",
			before:      fakeCRI{},
			after:       fakeCRI{containers: []*runtimeapi.Container{{Id: "x", State: running}}},
			wantChanged: "",
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ctx := context.Background()
			cri := tc.before
			g := newPLEG(&cri, 0, NewMetrics(nil))
			g.relist(ctx)
			drainUIDs(g)
			cri.sandboxes, cri.containers = tc.after.sandboxes, tc.after.containers
			g.relist(ctx)
			if got := drainUIDs(g); got != tc.wantChanged {
				t.Errorf("changed pods = %q, want %q", got, tc.wantChanged)
			}
		})
	}
}

func drainUIDs(g *pleg) string {
	var uids []string
	for _, uid := range g.Take() {
		uids = append(uids, string(uid))
	}
	sort.Strings(uids)
	return strings.Join(uids, ",")
}
