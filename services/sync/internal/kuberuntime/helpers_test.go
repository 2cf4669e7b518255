package kuberuntime

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// Test fixtures: a pod with three regular containers foo1..foo3, restart
// policy Always, in one ready sandbox with an IP, all containers running
// from their current spec. Cases mutate the pod and the status from there.

const (
	testRuntime   = "fake"
	testImage     = "busybox:1.36"
	testSandboxID = "sandbox-0"
	testPodIP     = "10.88.0.7"
)

var testEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func makeTestPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "uid-1", Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways,
			Containers: []v1.Container{
				{Name: "foo1", Image: testImage},
				{Name: "foo2", Image: testImage},
				{Name: "foo3", Image: testImage},
			},
		},
	}
}

// makeTestPodStatus returns the runtime view of pod with every regular
// container running from its current spec.
func makeTestPodStatus(pod *v1.Pod) *container.PodStatus {
	ps := &container.PodStatus{
		ID:              pod.UID,
		Name:            pod.Name,
		Namespace:       pod.Namespace,
		IPs:             []string{testPodIP},
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{readySandbox(testSandboxID, 0)},
	}
	for _, c := range pod.Spec.Containers {
		ps.ContainerStatuses = append(ps.ContainerStatuses, running(c.Name))
	}
	return ps
}

func readySandbox(id string, attempt uint32) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{
		Id:       id,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1", Attempt: attempt},
		State:    runtimeapi.PodSandboxState_SANDBOX_READY,
		Network:  &runtimeapi.PodSandboxNetworkStatus{Ip: testPodIP},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
			Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD},
		}},
	}
}

func notReadySandbox(id string, attempt uint32) *runtimeapi.PodSandboxStatus {
	s := readySandbox(id, attempt)
	s.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return s
}

// cid is the ID the fixtures give the latest instance of container name.
func cid(name string) container.ContainerID {
	return container.BuildContainerID(testRuntime, name+"-id")
}

// hashOf is the hash of a container spec named name with the test image.
func hashOf(name string) uint64 {
	return container.HashContainer(&v1.Container{Name: name, Image: testImage})
}

func running(name string) *container.Status {
	return &container.Status{
		ID: cid(name), Name: name, State: container.ContainerStateRunning,
		CreatedAt: testEpoch, StartedAt: testEpoch, Image: testImage, Hash: hashOf(name),
	}
}

func exited(name string, code int) *container.Status {
	s := running(name)
	s.State = container.ContainerStateExited
	s.ExitCode = code
	s.FinishedAt = testEpoch.Add(time.Minute)
	return s
}

func created(name string) *container.Status {
	s := running(name)
	s.State = container.ContainerStateCreated
	s.StartedAt = time.Time{}
	return s
}

func unknown(name string) *container.Status {
	s := running(name)
	s.State = container.ContainerStateUnknown
	return s
}

func oomKilled(name string, code int) *container.Status {
	s := exited(name, code)
	s.Reason = "OOMKilled"
	return s
}

// setStatuses replaces the latest status of each named container, adding
// it if the container has none.
func setStatuses(ps *container.PodStatus, sts ...*container.Status) {
	for _, st := range sts {
		i := slices.IndexFunc(ps.ContainerStatuses, func(s *container.Status) bool { return s.Name == st.Name })
		if i < 0 {
			ps.ContainerStatuses = append(ps.ContainerStatuses, st)
			continue
		}
		ps.ContainerStatuses[i] = st
	}
}

// onlyStatuses makes sts the only container instances the runtime knows.
func onlyStatuses(ps *container.PodStatus, sts ...*container.Status) {
	ps.ContainerStatuses = sts
}

// removeStatuses forgets every instance of the named containers (as after
// garbage collection).
func removeStatuses(ps *container.PodStatus, names ...string) {
	ps.ContainerStatuses = slices.DeleteFunc(ps.ContainerStatuses, func(s *container.Status) bool {
		return slices.Contains(names, s.Name)
	})
}

// exitAll marks every regular container exited with code.
func exitAll(ps *container.PodStatus, code int) {
	for i, s := range ps.ContainerStatuses {
		ps.ContainerStatuses[i] = exited(s.Name, code)
	}
}

func withPolicy(policy v1.RestartPolicy) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.RestartPolicy = policy }
}

func initContainer(name string) v1.Container {
	return v1.Container{Name: name, Image: testImage}
}

func sidecar(name string) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	return v1.Container{Name: name, Image: testImage, RestartPolicy: &always}
}

func withStartupProbe(c v1.Container) v1.Container {
	c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	return c
}

func withLivenessProbe(c v1.Container) v1.Container {
	c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	return c
}

// withInits sets the pod's init containers (and keeps its policy).
func withInits(inits ...v1.Container) func(*v1.Pod) {
	// Each pod gets its own copy, so a case that edits one cannot leak into
	// the next.
	return func(p *v1.Pod) { p.Spec.InitContainers = slices.Clone(inits) }
}

// chain applies several pod mutations in order.
func chain(fns ...func(*v1.Pod)) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, fn := range fns {
			fn(p)
		}
	}
}

// Expected-actions builders.

// noAction is "the pod is fine as it is".
func noAction() PodActions {
	return PodActions{SandboxID: testSandboxID}
}

func startContainers(idx ...int) PodActions {
	a := noAction()
	a.ContainersToStart = idx
	return a
}

func startInits(idx ...int) PodActions {
	a := noAction()
	a.InitContainersToStart = idx
	return a
}

// killPod is the terminal signal: kill everything, create nothing.
func killPod() PodActions {
	a := noAction()
	a.KillPod = true
	return a
}

// recreate is "kill the pod and build a new sandbox".
func recreate(sandboxID string, attempt uint32) PodActions {
	return PodActions{KillPod: true, CreateSandbox: true, SandboxID: sandboxID, Attempt: attempt}
}

func (a PodActions) withStart(idx ...int) PodActions {
	a.ContainersToStart = idx
	return a
}

func (a PodActions) withInitStart(idx ...int) PodActions {
	a.InitContainersToStart = idx
	return a
}

func (a PodActions) withEphemeral(idx ...int) PodActions {
	a.EphemeralContainersToStart = idx
	return a
}

func (a PodActions) withKills(kills ...ContainerToKillInfo) PodActions {
	a.ContainersToKill = map[container.ContainerID]ContainerToKillInfo{}
	for _, k := range kills {
		a.ContainersToKill[cid(k.Name)] = k
	}
	return a
}

func killInfo(name string, reason ContainerKillReason, message string) ContainerToKillInfo {
	return ContainerToKillInfo{Name: name, Container: &v1.Container{Name: name}, Reason: reason, Message: message}
}

func killChanged(name string, restart bool) ContainerToKillInfo {
	return killInfo(name, "", withRestart(fmt.Sprintf("Container %s definition changed", name), restart))
}

func killLiveness(name string, restart bool) ContainerToKillInfo {
	return killInfo(name, ReasonLivenessProbe, withRestart(fmt.Sprintf("Container %s failed liveness probe", name), restart))
}

func killStartup(name string, restart bool) ContainerToKillInfo {
	return killInfo(name, ReasonStartupProbe, withRestart(fmt.Sprintf("Container %s failed startup probe", name), restart))
}

func killUnknown(name string) ContainerToKillInfo {
	return killInfo(name, ReasonUnknown, `Container is in "unknown" state, try killing it before restart`)
}

func killInitUnknown(name string) ContainerToKillInfo {
	return killInfo(name, ReasonUnknown, `Init container is in "unknown" state, try killing it before restart`)
}

func killInitChanged(name string) ContainerToKillInfo {
	return killInfo(name, "", fmt.Sprintf("Init container %s definition changed", name))
}

func killInitLiveness(name string) ContainerToKillInfo {
	return killInfo(name, ReasonLivenessProbe, fmt.Sprintf("Init container %s failed liveness probe", name))
}

func killInitStartup(name string) ContainerToKillInfo {
	return killInfo(name, ReasonStartupProbe, fmt.Sprintf("Init container %s failed startup probe", name))
}

func withRestart(msg string, restart bool) string {
	if restart {
		return msg + ", will be restarted"
	}
	return msg
}

// fakeProbes is a hand-written ProbeResults with fixed answers; anything
// not listed is ProbeUnknown.
type fakeProbes struct {
	liveness map[container.ContainerID]ProbeResult
	startup  map[container.ContainerID]ProbeResult
}

var _ ProbeResults = (*fakeProbes)(nil)

func (f *fakeProbes) Liveness(id container.ContainerID) ProbeResult {
	if f == nil {
		return ProbeUnknown
	}
	return f.liveness[id]
}

func (f *fakeProbes) Startup(id container.ContainerID) ProbeResult {
	if f == nil {
		return ProbeUnknown
	}
	return f.startup[id]
}

func liveness(name string, r ProbeResult) *fakeProbes {
	return &fakeProbes{liveness: map[container.ContainerID]ProbeResult{cid(name): r}}
}

func startup(name string, r ProbeResult) *fakeProbes {
	return &fakeProbes{startup: map[container.ContainerID]ProbeResult{cid(name): r}}
}

// comparableKill is the part of a ContainerToKillInfo a test can state:
// the spec pointer is compared by the name it points at.
type comparableKill struct {
	Name, ContainerName, Message string
	Reason                       ContainerKillReason
}

// diffActions describes how got differs from want, or returns "". Nil and
// empty lists and maps are the same to SyncPod, so they compare equal.
func diffActions(want, got PodActions) string {
	var diffs []string
	add := func(field string, w, g any) {
		diffs = append(diffs, fmt.Sprintf("%s: want %v, got %v", field, w, g))
	}
	if want.KillPod != got.KillPod {
		add("KillPod", want.KillPod, got.KillPod)
	}
	if want.CreateSandbox != got.CreateSandbox {
		add("CreateSandbox", want.CreateSandbox, got.CreateSandbox)
	}
	if want.SandboxID != got.SandboxID {
		add("SandboxID", want.SandboxID, got.SandboxID)
	}
	if want.Attempt != got.Attempt {
		add("Attempt", want.Attempt, got.Attempt)
	}
	if !slices.Equal(want.InitContainersToStart, got.InitContainersToStart) {
		add("InitContainersToStart", want.InitContainersToStart, got.InitContainersToStart)
	}
	if !slices.Equal(want.ContainersToStart, got.ContainersToStart) {
		add("ContainersToStart", want.ContainersToStart, got.ContainersToStart)
	}
	if !slices.Equal(want.EphemeralContainersToStart, got.EphemeralContainersToStart) {
		add("EphemeralContainersToStart", want.EphemeralContainersToStart, got.EphemeralContainersToStart)
	}
	toComparable := func(m map[container.ContainerID]ContainerToKillInfo) map[container.ContainerID]comparableKill {
		out := make(map[container.ContainerID]comparableKill, len(m))
		for id, k := range m {
			ck := comparableKill{Name: k.Name, Message: k.Message, Reason: k.Reason}
			if k.Container != nil {
				ck.ContainerName = k.Container.Name
			}
			out[id] = ck
		}
		return out
	}
	if w, g := toComparable(want.ContainersToKill), toComparable(got.ContainersToKill); !maps.Equal(w, g) {
		add("ContainersToKill", w, g)
	}
	if w, g := resetsOf(want.ContainersToReset), resetsOf(got.ContainersToReset); !slices.Equal(w, g) {
		add("ContainersToReset", w, g)
	}
	return strings.Join(diffs, "\n")
}

// resetsOf renders removals as "name/id" with "+kill" when the instance is
// killed first, in order.
func resetsOf(infos []ContainerToRemoveInfo) []string {
	out := make([]string, 0, len(infos))
	for _, r := range infos {
		s := r.Container.Name + "/" + r.ContainerID.ID
		if r.Kill {
			s += "+kill"
		}
		out = append(out, s)
	}
	return out
}

// TestDiffActions checks the comparison the table tests rely on, so that a
// broken comparer cannot make them pass vacuously.
func TestDiffActions(t *testing.T) {
	base := startContainers(1).withKills(killUnknown("foo2"))
	for _, tc := range []struct {
		desc   string
		mutate func(*PodActions)
		differ bool
	}{
		{desc: "identical", mutate: func(*PodActions) {}},
		{desc: "nil and empty start lists are equal", mutate: func(a *PodActions) { a.InitContainersToStart = []int{} }},
		{desc: "KillPod differs", mutate: func(a *PodActions) { a.KillPod = true }, differ: true},
		{desc: "CreateSandbox differs", mutate: func(a *PodActions) { a.CreateSandbox = true }, differ: true},
		{desc: "SandboxID differs", mutate: func(a *PodActions) { a.SandboxID = "other" }, differ: true},
		{desc: "Attempt differs", mutate: func(a *PodActions) { a.Attempt = 2 }, differ: true},
		{desc: "start order differs", mutate: func(a *PodActions) { a.ContainersToStart = []int{1, 0} }, differ: true},
		{desc: "init start differs", mutate: func(a *PodActions) { a.InitContainersToStart = []int{0} }, differ: true},
		{desc: "ephemeral differs", mutate: func(a *PodActions) { a.EphemeralContainersToStart = []int{0} }, differ: true},
		{desc: "kill reason differs", mutate: func(a *PodActions) {
			a.ContainersToKill = map[container.ContainerID]ContainerToKillInfo{cid("foo2"): killInfo("foo2", ReasonLivenessProbe, killUnknown("foo2").Message)}
		}, differ: true},
		{desc: "kill message differs", mutate: func(a *PodActions) {
			a.ContainersToKill = map[container.ContainerID]ContainerToKillInfo{cid("foo2"): killInfo("foo2", ReasonUnknown, "other")}
		}, differ: true},
		{desc: "kill missing", mutate: func(a *PodActions) { a.ContainersToKill = nil }, differ: true},
		{desc: "reset differs", mutate: func(a *PodActions) {
			a.ContainersToReset = []ContainerToRemoveInfo{{ContainerID: cid("foo1"), Container: &v1.Container{Name: "foo1"}}}
		}, differ: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := base.withKills(killUnknown("foo2"))
			tc.mutate(&got)
			if d := diffActions(base, got); (d != "") != tc.differ {
				t.Errorf("diffActions differ=%t, want %t (%q)", d != "", tc.differ, d)
			}
		})
	}
}
