package container

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubeletSampleContainer and kubeletSampleHash are the fixture of the
// kubelet's TestConsistentHashContainer (pkg/kubelet/container/
// container_hash_test.go, value for v1.31+). Matching it proves that sync
// computes the same hash as a kubelet, label for label.
const kubeletSampleContainer = `{
  "name": "test_container",
  "image": "foo/image:v1",
  "command": ["/bin/testcmd"],
  "args": ["/bin/sh", "-c", "echo abc"],
  "ports": [{"containerPort": 8001}],
  "env": [
    {"name": "ENV_FOO", "value": "bar"},
    {"name": "ENV_BAR", "valueFrom": {"secretKeyRef": {"name": "foo", "key": "bar", "optional": true}}}
  ],
  "resources": {"limits": {"foo": "1G"}, "requests": {"foo": "500M"}}
}`

const kubeletSampleHash = uint64(0x8e45cbd0)

func TestHashContainerMatchesKubelet(t *testing.T) {
	var c v1.Container
	if err := json.Unmarshal([]byte(kubeletSampleContainer), &c); err != nil {
		t.Fatal(err)
	}
	if got := HashContainer(&c); got != kubeletSampleHash {
		t.Errorf("HashContainer = %#x, want the kubelet's %#x", got, kubeletSampleHash)
	}
}

func TestHashContainer(t *testing.T) {
	base := func() *v1.Container {
		return &v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "10"}}
	}
	baseHash := HashContainer(base())
	if again := HashContainer(base()); again != baseHash {
		t.Fatalf("hash not stable: %#x then %#x", baseHash, again)
	}
	for _, tc := range []struct {
		desc    string
		mutate  func(*v1.Container)
		changes bool
	}{
		{desc: "image tag", mutate: func(c *v1.Container) { c.Image = "busybox:1.37" }, changes: true},
		{desc: "image digest", mutate: func(c *v1.Container) { c.Image = "busybox@sha256:0123" }, changes: true},
		{desc: "name", mutate: func(c *v1.Container) { c.Name = "app2" }, changes: true},
		// The kubelet hashes only name and image since v1.31; the other
		// fields are immutable in the API, and hashing them restarted
		// containers across upgrades.
		{desc: "command ignored", mutate: func(c *v1.Container) { c.Command = []string{"sleep", "20"} }},
		{desc: "args ignored", mutate: func(c *v1.Container) { c.Args = []string{"-x"} }},
		{desc: "env ignored", mutate: func(c *v1.Container) { c.Env = []v1.EnvVar{{Name: "A", Value: "1"}} }},
		{desc: "resources ignored", mutate: func(c *v1.Container) {
			c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}
		}},
		{desc: "probes ignored", mutate: func(c *v1.Container) { c.LivenessProbe = &v1.Probe{PeriodSeconds: 3} }},
		{desc: "image pull policy ignored", mutate: func(c *v1.Container) { c.ImagePullPolicy = v1.PullAlways }},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := base()
			tc.mutate(c)
			got := HashContainer(c)
			if (got != baseHash) != tc.changes {
				t.Errorf("hash %#x vs base %#x: changed=%t, want %t", got, baseHash, got != baseHash, tc.changes)
			}
		})
	}
}

func TestSpewByteSlice(t *testing.T) {
	// go-spew renders []byte{'{', '}'} with "%#v" as "([]uint8)[123 125]".
	for _, tc := range []struct {
		desc string
		in   []byte
		want string
	}{
		{desc: "empty", in: []byte{}, want: "([]uint8)[]"},
		{desc: "one byte", in: []byte{7}, want: "([]uint8)[7]"},
		{desc: "braces", in: []byte("{}"), want: "([]uint8)[123 125]"},
		{desc: "high byte", in: []byte{0, 255}, want: "([]uint8)[0 255]"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := string(spewByteSlice(tc.in)); got != tc.want {
				t.Errorf("spewByteSlice = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestShouldContainerBeRestarted(t *testing.T) {
	spec := &v1.Container{Name: "app", Image: "busybox"}
	deleted := metav1.Now()
	for _, tc := range []struct {
		desc     string
		policy   v1.RestartPolicy
		deleting bool
		status   *Status // latest instance of "app"; nil means none
		want     bool
	}{
		{desc: "never created, Always", policy: v1.RestartPolicyAlways, want: true},
		{desc: "never created, Never", policy: v1.RestartPolicyNever, want: true},
		{desc: "never created, pod deleting", policy: v1.RestartPolicyAlways, deleting: true, want: false},
		{desc: "running", policy: v1.RestartPolicyAlways, status: &Status{Name: "app", State: ContainerStateRunning}, want: false},
		{desc: "created, Never", policy: v1.RestartPolicyNever, status: &Status{Name: "app", State: ContainerStateCreated}, want: true},
		{desc: "unknown, Never", policy: v1.RestartPolicyNever, status: &Status{Name: "app", State: ContainerStateUnknown}, want: true},
		{desc: "unknown, pod deleting", policy: v1.RestartPolicyAlways, deleting: true, status: &Status{Name: "app", State: ContainerStateUnknown}, want: false},
		{desc: "exited 0, Always", policy: v1.RestartPolicyAlways, status: &Status{Name: "app", State: ContainerStateExited}, want: true},
		{desc: "exited 1, Always", policy: v1.RestartPolicyAlways, status: &Status{Name: "app", State: ContainerStateExited, ExitCode: 1}, want: true},
		{desc: "exited 0, OnFailure", policy: v1.RestartPolicyOnFailure, status: &Status{Name: "app", State: ContainerStateExited}, want: false},
		{desc: "exited 137, OnFailure", policy: v1.RestartPolicyOnFailure, status: &Status{Name: "app", State: ContainerStateExited, ExitCode: 137}, want: true},
		{desc: "exited 0, Never", policy: v1.RestartPolicyNever, status: &Status{Name: "app", State: ContainerStateExited}, want: false},
		{desc: "exited 1, Never", policy: v1.RestartPolicyNever, status: &Status{Name: "app", State: ContainerStateExited, ExitCode: 1}, want: false},
		{desc: "exited 1, pod deleting", policy: v1.RestartPolicyAlways, deleting: true, status: &Status{Name: "app", State: ContainerStateExited, ExitCode: 1}, want: false},
		{desc: "only another container's status", policy: v1.RestartPolicyNever, status: &Status{Name: "other", State: ContainerStateExited}, want: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.policy, Containers: []v1.Container{*spec}}}
			if tc.deleting {
				pod.DeletionTimestamp = &deleted
			}
			ps := &PodStatus{}
			if tc.status != nil {
				ps.ContainerStatuses = []*Status{tc.status}
			}
			if got := ShouldContainerBeRestarted(spec, pod, ps); got != tc.want {
				t.Errorf("ShouldContainerBeRestarted = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestIsRestartableInitContainer(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	never := v1.ContainerRestartPolicyNever
	for _, tc := range []struct {
		desc string
		c    *v1.Container
		want bool
	}{
		{desc: "nil", c: nil},
		{desc: "no policy", c: &v1.Container{Name: "i"}},
		{desc: "policy Always", c: &v1.Container{Name: "i", RestartPolicy: &always}, want: true},
		{desc: "policy Never", c: &v1.Container{Name: "i", RestartPolicy: &never}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := IsRestartableInitContainer(tc.c); got != tc.want {
				t.Errorf("IsRestartableInitContainer = %t, want %t", got, tc.want)
			}
		})
	}
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "a"}, {Name: "b", RestartPolicy: &always}}}}
	if !HasRestartableInitContainer(pod) {
		t.Error("HasRestartableInitContainer = false for a pod with a sidecar")
	}
	pod.Spec.InitContainers = pod.Spec.InitContainers[:1]
	if HasRestartableInitContainer(pod) {
		t.Error("HasRestartableInitContainer = true for a pod without sidecar")
	}
}

func TestSameResources(t *testing.T) {
	rl := func(kv ...string) v1.ResourceList {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	for _, tc := range []struct {
		a, b v1.ResourceRequirements
		same bool
	}{
		{v1.ResourceRequirements{}, v1.ResourceRequirements{Requests: v1.ResourceList{}}, true},
		{v1.ResourceRequirements{Limits: rl("cpu", "1")}, v1.ResourceRequirements{Limits: rl("cpu", "1000m")}, true},
		{v1.ResourceRequirements{Limits: rl("cpu", "1")}, v1.ResourceRequirements{Limits: rl("cpu", "2")}, false},
		{v1.ResourceRequirements{Limits: rl("cpu", "1")}, v1.ResourceRequirements{Limits: rl("memory", "1")}, false},
		{v1.ResourceRequirements{Requests: rl("cpu", "1")}, v1.ResourceRequirements{Limits: rl("cpu", "1")}, false},
	} {
		if got := SameResources(&tc.a, &tc.b); got != tc.same {
			t.Errorf("SameResources(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
