package test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The runtime is the truth: when the runtime loses every sandbox and
// container (here the fake backend's state, gone with a gateway crash; on a
// node, a containerd restart that wiped its state or a reboot), the next
// relist sees them gone and sync starts the pods again as the kubelet does:
// a new sandbox, the containers started again with their restart counts
// carried on, and the pod Running again within a relist period plus
// back-off.
func TestRuntimeLosesEverything(t *testing.T) {
	s := startStack(t, stackOptions{})
	names := []string{"web-a", "web-b", "web-c"}
	uids := map[string]string{}
	for _, name := range names {
		uids[name] = s.apply(fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers: [{name: app, image: busybox:1.36}]\n", name)).GetPods()[0].GetUid()
	}
	before := map[string]string{} // pod -> sandbox id
	for _, name := range names {
		s.waitPod(name, 20*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
		for _, sb := range s.sandboxes() {
			if sb.GetLabels()["io.kubernetes.pod.uid"] == uids[name] {
				before[name] = sb.GetId()
			}
		}
	}

	// The gateway crashes; the fake runtime it held is gone with it.
	s.Gateway.Kill()
	if err := s.Gateway.Restart(t.Context(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := len(s.sandboxes()); n != 0 {
		t.Fatalf("the restarted fake runtime holds %d sandboxes, want none", n)
	}

	for _, name := range names {
		s.waitPod(name, 30*time.Second, "running again in a new sandbox", func(p *v1.Pod) bool {
			cs := containerStatus(p, "app")
			return p.Status.Phase == v1.PodRunning && cs != nil && cs.State.Running != nil && cs.Ready &&
				s.sandboxesOf(uids[name]) == 1 && len(s.containers(uids[name])) == 1
		})
		for _, sb := range s.sandboxes() {
			if sb.GetLabels()["io.kubernetes.pod.uid"] == uids[name] && sb.GetId() == before[name] {
				t.Errorf("%s: sandbox %s again; want a new one", name, sb.GetId())
			}
		}
	}
}
