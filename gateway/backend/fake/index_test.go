package fake

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestIndexedListsMatchScan builds random sandboxes and containers (pod UID
// labels shared by several sandboxes, missing, empty, or on a container
// disagreeing with its sandbox), moves them through random states, removes
// some, and checks after every round that ListPodSandbox, ListContainers,
// ListContainerStats and ListPodSandboxStats answer random filters exactly as
// a brute-force scan of the unfiltered lists does.
func TestIndexedListsMatchScan(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, 42))
			r := newTestRuntime(t, Options{})
			uids := []string{"u0", "u1", "u2", "u3", "u4", "u5", ""}
			apps := []string{"web", "db"}
			var sandboxes, containers []string
			must := func(_ any, err error) {
				if err != nil {
					t.Fatal(err)
				}
			}
			pod := 0
			for round := 0; round < 6; round++ {
				// Grow: pods whose UID label is random, so several sandboxes
				// (attempts) share a UID as the kubelet's do.
				for range 8 {
					pod++
					cfg := sandboxConfig(fmt.Sprintf("p%d", pod))
					cfg.Labels["app"] = apps[rng.IntN(len(apps))]
					if rng.IntN(6) != 0 {
						cfg.Labels[PodUIDLabel] = uids[rng.IntN(len(uids))]
					}
					sb := runSandbox(t, r, cfg)
					sandboxes = append(sandboxes, sb)
					for j := range rng.IntN(4) {
						ccfg := containerConfig(fmt.Sprintf("c%d", j), nil)
						ccfg.Labels["app"] = apps[rng.IntN(len(apps))]
						switch rng.IntN(5) {
						case 0: // no pod label
						case 1: // a label disagreeing with the sandbox's
							ccfg.Labels[PodUIDLabel] = uids[rng.IntN(len(uids))]
						default:
							if uid, ok := cfg.Labels[PodUIDLabel]; ok {
								ccfg.Labels[PodUIDLabel] = uid
							}
						}
						containers = append(containers, createContainer(t, r, sb, cfg, ccfg))
					}
				}
				// Shake: start, stop and remove at random.
				for _, id := range containers {
					switch rng.IntN(6) {
					case 0, 1:
						r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
					case 2:
						r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id})
					case 3:
						must(r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}))
					}
				}
				for _, id := range sandboxes {
					switch rng.IntN(8) {
					case 0:
						must(r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}))
					case 1:
						must(r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}))
					}
				}
				checkIndexes(t, r)
				compareLists(t, r, rng, append(slices.Clone(uids), "nope"), apps)
			}
			// Removing everything must leave the indexes empty.
			for _, id := range sandboxes {
				must(r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}))
			}
			if n := len(r.st.sandboxesByPod) + len(r.st.containersByPod); n != 0 {
				t.Fatalf("%d pod UIDs left in the indexes after removing everything", n)
			}
		})
	}
}

// checkIndexes checks that the pod UID indexes hold exactly the objects
// carrying the label, under its value.
func checkIndexes(t *testing.T, r *Runtime) {
	t.Helper()
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	for uid, byID := range r.st.sandboxesByPod {
		for id, sb := range byID {
			n++
			if r.st.sandboxes[id] != sb || sb.config.GetLabels()[PodUIDLabel] != uid {
				t.Fatalf("sandbox %s indexed under %q but stored as %v", id, uid, r.st.sandboxes[id])
			}
		}
	}
	for _, sb := range r.st.sandboxes {
		if _, ok := sb.config.GetLabels()[PodUIDLabel]; ok {
			n--
		}
	}
	if n != 0 {
		t.Fatalf("sandbox index and store disagree by %d", n)
	}
	for uid, byID := range r.st.containersByPod {
		for id, c := range byID {
			n++
			if r.st.containers[id] != c || c.config.GetLabels()[PodUIDLabel] != uid {
				t.Fatalf("container %s indexed under %q but stored as %v", id, uid, r.st.containers[id])
			}
		}
	}
	for _, c := range r.st.containers {
		if _, ok := c.config.GetLabels()[PodUIDLabel]; ok {
			n--
		}
		if c.sb.containers[c.id] != c || r.st.sandboxes[c.sb.id] != c.sb {
			t.Fatalf("container %s not in its sandbox's index", c.id)
		}
	}
	if n != 0 {
		t.Fatalf("container index and store disagree by %d", n)
	}
}

// compareLists asks random filters of the runtime and of a scan.
func compareLists(t *testing.T, r *Runtime, rng *rand.Rand, uids, apps []string) {
	t.Helper()
	ctx := context.Background()
	allSB, err := r.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	allC, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sbIDs := make([]string, 0, len(allSB.Items))
	for _, s := range allSB.Items {
		sbIDs = append(sbIDs, s.Id)
	}
	cIDs := make([]string, 0, len(allC.Containers))
	for _, c := range allC.Containers {
		cIDs = append(cIDs, c.Id)
	}
	pickID := func(ids []string) string {
		switch n := rng.IntN(6); {
		case n < 3 || len(ids) == 0:
			return ""
		case n == 3:
			return "f00d" // unknown
		case n == 4:
			return ids[rng.IntN(len(ids))][:1+rng.IntN(3)] // a short prefix, ambiguous or not
		default:
			return ids[rng.IntN(len(ids))]
		}
	}
	pickSelector := func() map[string]string {
		sel := map[string]string{}
		if rng.IntN(4) != 0 {
			sel[PodUIDLabel] = uids[rng.IntN(len(uids))]
		}
		if rng.IntN(3) == 0 {
			sel["app"] = apps[rng.IntN(len(apps))]
		}
		return sel
	}
	for range 200 {
		sf := &runtimeapi.PodSandboxFilter{Id: pickID(sbIDs), LabelSelector: pickSelector()}
		if rng.IntN(3) == 0 {
			sf.State = &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState(rng.IntN(2))}
		}
		var want []*runtimeapi.PodSandbox
		for _, s := range allSB.Items {
			if scanID(sbIDs, sf.Id, s.Id) && (sf.State == nil || sf.State.State == s.State) && scanLabels(s.Labels, sf.LabelSelector) {
				want = append(want, s)
			}
		}
		got, err := r.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: sf})
		if err != nil {
			t.Fatal(err)
		}
		sameProtos(t, fmt.Sprintf("ListPodSandbox(%v)", sf), got.Items, want, (*runtimeapi.PodSandbox).GetId)

		ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
		var wantStats []string
		for _, s := range allSB.Items {
			if scanID(sbIDs, sf.Id, s.Id) && s.State == ready.State && scanLabels(s.Labels, sf.LabelSelector) {
				wantStats = append(wantStats, s.Id)
			}
		}
		stats, err := r.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: &runtimeapi.PodSandboxStatsFilter{Id: sf.Id, LabelSelector: sf.LabelSelector}})
		if err != nil {
			t.Fatal(err)
		}
		var gotStats []string
		for _, s := range stats.Stats {
			gotStats = append(gotStats, s.Attributes.Id)
		}
		if !sameSet(gotStats, wantStats) {
			t.Fatalf("ListPodSandboxStats(%v) = %v, want %v", sf, gotStats, wantStats)
		}

		cf := &runtimeapi.ContainerFilter{Id: pickID(cIDs), PodSandboxId: pickID(sbIDs), LabelSelector: pickSelector()}
		if rng.IntN(3) == 0 {
			cf.State = &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState(rng.IntN(3))}
		}
		var wantC []*runtimeapi.Container
		var wantCStats []string
		for _, c := range allC.Containers {
			if scanID(cIDs, cf.Id, c.Id) && scanID(sbIDs, cf.PodSandboxId, c.PodSandboxId) && scanLabels(c.Labels, cf.LabelSelector) {
				if cf.State == nil || cf.State.State == c.State {
					wantC = append(wantC, c)
				}
				if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
					wantCStats = append(wantCStats, c.Id)
				}
			}
		}
		gotC, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: cf})
		if err != nil {
			t.Fatal(err)
		}
		sameProtos(t, fmt.Sprintf("ListContainers(%v)", cf), gotC.Containers, wantC, (*runtimeapi.Container).GetId)
		cstats, err := r.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{
			Id: cf.Id, PodSandboxId: cf.PodSandboxId, LabelSelector: cf.LabelSelector,
		}})
		if err != nil {
			t.Fatal(err)
		}
		var gotCStats []string
		for _, s := range cstats.Stats {
			gotCStats = append(gotCStats, s.Attributes.Id)
		}
		if !sameSet(gotCStats, wantCStats) {
			t.Fatalf("ListContainerStats(%v) = %v, want %v", cf, gotCStats, wantCStats)
		}
	}
}

// scanID is the CRI id filter by brute force: empty matches everything;
// otherwise filter must be id itself, or a prefix of id and of no other ID.
func scanID(all []string, filter, id string) bool {
	if filter == "" || filter == id {
		return true
	}
	if slices.Contains(all, filter) || !strings.HasPrefix(id, filter) {
		return false
	}
	n := 0
	for _, other := range all {
		if strings.HasPrefix(other, filter) {
			n++
		}
	}
	return n == 1
}

// scanLabels is the CRI label selector: every pair present with its value.
func scanLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// sameProtos compares two lists as sets, item by item.
func sameProtos[T proto.Message](t *testing.T, call string, got, want []T, id func(T) string) {
	t.Helper()
	byID := func(a, b T) int { return cmp.Compare(id(a), id(b)) }
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	if len(got) != len(want) {
		t.Fatalf("%s: %d items, scan finds %d", call, len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Fatalf("%s: item %d = %v, scan finds %v", call, i, got[i], want[i])
		}
	}
}

// TestMetadataCopiesEveryField fills every field of the metadata messages
// through reflection, so a field the CRI adds later is caught: the copies
// must equal the originals.
func TestMetadataCopiesEveryField(t *testing.T) {
	tests := []struct {
		desc string
		msg  proto.Message
		copy func(proto.Message) proto.Message
	}{
		{desc: "sandbox", msg: &runtimeapi.PodSandboxMetadata{}, copy: func(m proto.Message) proto.Message {
			return copySandboxMetadata(m.(*runtimeapi.PodSandboxMetadata))
		}},
		{desc: "container", msg: &runtimeapi.ContainerMetadata{}, copy: func(m proto.Message) proto.Message {
			return copyContainerMetadata(m.(*runtimeapi.ContainerMetadata))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			m := tc.msg.ProtoReflect()
			fields := m.Descriptor().Fields()
			for i := range fields.Len() {
				f := fields.Get(i)
				switch f.Kind() {
				case protoreflect.StringKind:
					m.Set(f, protoreflect.ValueOfString("v"+string(f.Name())))
				case protoreflect.Uint32Kind:
					m.Set(f, protoreflect.ValueOfUint32(uint32(7+i)))
				default:
					t.Fatalf("field %s of kind %s: teach the copy and this test about it", f.Name(), f.Kind())
				}
			}
			if got := tc.copy(tc.msg); !proto.Equal(got, tc.msg) {
				t.Fatalf("copy = %v, want %v", got, tc.msg)
			}
		})
	}
}
