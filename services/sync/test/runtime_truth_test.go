package test

import (
	"fmt"
	"os"
	"path/filepath"
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

// A crash of sync (kill -9) loses no pod status: the restarted sync reports
// the same startTime, conditions' lastTransitionTime, pod IPs and, for a
// static pod, creationTimestamp, and restarts no container. The kubelet
// keeps them in its status manager and the API server.
func TestStatusSurvivesSyncCrash(t *testing.T) {
	s := startStack(t, stackOptions{manifestDir: true})
	s.apply(webPod)
	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: static}\nspec:\n  containers: [{name: app, image: busybox:1.36}]\n"
	if err := os.WriteFile(filepath.Join(s.manifestDir(), "static.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	before := map[string]*v1.Pod{}
	for _, name := range []string{"web", "static-node1"} {
		before[name] = s.waitPod(name, 20*time.Second, "Running and Ready", func(p *v1.Pod) bool {
			c := condition(p, v1.PodReady)
			return p.Status.Phase == v1.PodRunning && c != nil && c.Status == v1.ConditionTrue
		})
	}
	// Every status a client has seen is on disk.
	waitFor(t, 10*time.Second, "statuses kept", func() (bool, string) {
		v, err := s.Metric("splitlet_status_keeper_unsaved_changes")
		return err == nil && v == 0, fmt.Sprint(v, err)
	})
	// The statuses were read before the metric said they were kept; read
	// them again in case one changed in between.
	for name := range before {
		before[name] = s.get(name)
	}

	s.Sync.Kill()
	if err := s.Sync.Restart(t.Context(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for name, old := range before {
		now := s.waitPod(name, 20*time.Second, "Running after the restart", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
		if !now.Status.StartTime.Equal(old.Status.StartTime) {
			t.Errorf("%s: startTime %v after the restart, was %v", name, now.Status.StartTime, old.Status.StartTime)
		}
		if !now.CreationTimestamp.Equal(&old.CreationTimestamp) {
			t.Errorf("%s: creationTimestamp %v after the restart, was %v", name, now.CreationTimestamp, old.CreationTimestamp)
		}
		if now.Status.PodIP != old.Status.PodIP {
			t.Errorf("%s: podIP %q after the restart, was %q", name, now.Status.PodIP, old.Status.PodIP)
		}
		for _, c := range old.Status.Conditions {
			nc := condition(now, c.Type)
			if nc == nil || nc.Status != c.Status || !nc.LastTransitionTime.Equal(&c.LastTransitionTime) {
				t.Errorf("%s: condition %s = %+v after the restart, was %+v", name, c.Type, nc, c)
			}
		}
		oc, nc := containerStatus(old, "app"), containerStatus(now, "app")
		if nc == nil || nc.ContainerID != oc.ContainerID || nc.RestartCount != oc.RestartCount {
			t.Errorf("%s: container %+v after the restart, was %+v", name, nc, oc)
		}
	}
}
