package fake

import (
	"context"
	"slices"
	"testing"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestListFilters(t *testing.T) {
	ctx := context.Background()
	r := newTestRuntime(t, Options{})
	cfgA, cfgB := sandboxConfig("a"), sandboxConfig("b")
	cfgB.Labels["tier"] = "db"
	sbA, sbB := runSandbox(t, r, cfgA), runSandbox(t, r, cfgB)
	a1 := createContainer(t, r, sbA, cfgA, containerConfig("one", nil))
	a2 := createContainer(t, r, sbA, cfgA, containerConfig("two", nil))
	b1 := createContainer(t, r, sbB, cfgB, containerConfig("one", nil))
	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: a2}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sbB}); err != nil {
		t.Fatal(err)
	}
	running := &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	created := &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_CREATED}

	ctrTests := []struct {
		desc   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{desc: "no filter", filter: nil, want: []string{a1, a2, b1}},
		{desc: "full id", filter: &runtimeapi.ContainerFilter{Id: a1}, want: []string{a1}},
		{desc: "id prefix", filter: &runtimeapi.ContainerFilter{Id: b1[:10]}, want: []string{b1}},
		{desc: "unknown id", filter: &runtimeapi.ContainerFilter{Id: "zzz"}, want: nil},
		{desc: "state", filter: &runtimeapi.ContainerFilter{State: running}, want: []string{a2}},
		{desc: "sandbox", filter: &runtimeapi.ContainerFilter{PodSandboxId: sbA}, want: []string{a1, a2}},
		{desc: "sandbox prefix", filter: &runtimeapi.ContainerFilter{PodSandboxId: sbB[:8]}, want: []string{b1}},
		{desc: "sandbox and state", filter: &runtimeapi.ContainerFilter{PodSandboxId: sbA, State: created}, want: []string{a1}},
		{desc: "id in another sandbox", filter: &runtimeapi.ContainerFilter{PodSandboxId: sbA, Id: b1}, want: nil},
		{desc: "labels", filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"container": "one"}}, want: []string{a1, b1}},
		{desc: "labels must all match", filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"container": "one", "x": "y"}}, want: nil},
	}
	for _, tc := range ctrTests {
		t.Run("containers/"+tc.desc, func(t *testing.T) {
			resp, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: tc.filter})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range resp.Containers {
				got = append(got, c.Id)
			}
			if !sameSet(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}

	ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	sbTests := []struct {
		desc   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{desc: "no filter", want: []string{sbA, sbB}},
		{desc: "id prefix", filter: &runtimeapi.PodSandboxFilter{Id: sbA[:6]}, want: []string{sbA}},
		{desc: "state", filter: &runtimeapi.PodSandboxFilter{State: ready}, want: []string{sbA}},
		{desc: "labels", filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"tier": "db"}}, want: []string{sbB}},
		{desc: "labels and state", filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"tier": "db"}, State: ready}, want: nil},
	}
	for _, tc := range sbTests {
		t.Run("sandboxes/"+tc.desc, func(t *testing.T) {
			resp, err := r.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: tc.filter})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range resp.Items {
				got = append(got, s.Id)
			}
			if !sameSet(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// chunkStream collects a Stream* RPC's responses.
type chunkStream[T any] struct {
	grpc.ServerStream
	got []*T
}

func (s *chunkStream[T]) Context() context.Context { return context.Background() }
func (s *chunkStream[T]) Send(m *T) error          { s.got = append(s.got, m); return nil }

func TestStreamContainersChunks(t *testing.T) {
	r := newTestRuntime(t, Options{})
	sbCfg := sandboxConfig("p")
	sb := runSandbox(t, r, sbCfg)
	const n = streamChunk + 7
	for i := 0; i < n; i++ {
		cfg := containerConfig("c", nil)
		cfg.Metadata.Attempt = uint32(i)
		createContainer(t, r, sb, sbCfg, cfg)
	}
	s := &chunkStream[runtimeapi.StreamContainersResponse]{}
	if err := r.StreamContainers(&runtimeapi.StreamContainersRequest{}, s); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, resp := range s.got {
		if len(resp.Containers) == 0 || len(resp.Containers) > streamChunk {
			t.Fatalf("chunk of %d", len(resp.Containers))
		}
		for _, c := range resp.Containers {
			if seen[c.Id] {
				t.Fatalf("%s sent twice", c.Id)
			}
			seen[c.Id] = true
		}
	}
	if len(seen) != n || len(s.got) != 2 {
		t.Fatalf("%d containers in %d chunks, want %d in 2", len(seen), len(s.got), n)
	}
	empty := &chunkStream[runtimeapi.StreamPodSandboxesResponse]{}
	if err := r.StreamPodSandboxes(&runtimeapi.StreamPodSandboxesRequest{Filter: &runtimeapi.PodSandboxFilter{Id: "none"}}, empty); err != nil || len(empty.got) != 0 {
		t.Fatalf("empty stream sent %d responses, err %v", len(empty.got), err)
	}
}

func TestRuntimeInfoRPCs(t *testing.T) {
	ctx := context.Background()
	r := newTestRuntime(t, Options{RuntimeVersion: "9.9.9"})
	v, err := r.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil || v.RuntimeName != "splitlet-fake" || v.RuntimeVersion != "9.9.9" || v.RuntimeApiVersion != "v1" {
		t.Fatalf("Version = %v, %v", v, err)
	}
	st, err := r.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	conds := map[string]bool{}
	for _, c := range st.Status.Conditions {
		conds[c.Type] = c.Status
	}
	if !conds[runtimeapi.RuntimeReady] || !conds[runtimeapi.NetworkReady] {
		t.Fatalf("conditions %v", conds)
	}
	rc, err := r.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if err != nil || rc.Linux.CgroupDriver != runtimeapi.CgroupDriver_CGROUPFS {
		t.Fatalf("RuntimeConfig = %v, %v", rc, err)
	}
	rc, err = New(Options{SystemdCgroups: true}).RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if err != nil || rc.Linux.CgroupDriver != runtimeapi.CgroupDriver_SYSTEMD {
		t.Fatalf("RuntimeConfig with SystemdCgroups = %v, %v", rc, err)
	}
	if _, err := r.CheckpointPod(ctx, &runtimeapi.CheckpointPodRequest{}); !errdefs.IsNotImplemented(err) {
		t.Fatalf("CheckpointPod err = %v", err)
	}
	if _, err := r.Exec(ctx, &runtimeapi.ExecRequest{}); !errdefs.IsInvalidArgument(err) {
		t.Fatalf("Exec without a command: err = %v", err)
	}
	if _, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("x"), RuntimeHandler: "kata"}); !errdefs.IsNotFound(err) {
		t.Fatalf("unknown runtime handler err = %v", err)
	}
}
