package test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The tests here run all three processes: splitlet-gateway (fake backend),
// splitlet-admission with a node of fixed capacity, and splitlet-sync
// asking it (--admission-endpoint).

// admissionConfig is a splitlet-admission configuration body for node1
// (the launcher adds its address and the gateway's) with the given capacity
// and no hard eviction thresholds (they would reserve memory from
// allocatable and depend on the machine); eviction is extra YAML for the
// eviction section.
func admissionConfig(rootDir, cpu, memory string, pods int, eviction string) string {
	if eviction == "" {
		eviction = "  hard: {}\n"
	}
	return fmt.Sprintf(`logLevel: debug
shutdownTimeout: 1s
node:
  rootDir: %s
  maxPods: %d
  capacity: {cpu: "%s", memory: %s, pods: "%d"}
eviction:
%s`, rootDir, pods, cpu, memory, pods, eviction)
}

// admissionStack starts the three processes; admission uses
// config(rootDir).
func admissionStack(t *testing.T, opts stackOptions, config func(rootDir string) string) *stack {
	t.Helper()
	opts.admission = config
	return startStack(t, opts)
}

// admitCounter stands where the admission service was: it answers every
// call 503, so sync still gets no decision, and counts the Admit and
// AdmitPods calls (sync's eviction watch calls it too, and is not counted).
type admitCounter struct {
	srv  *http.Server
	n    atomic.Int32
	done chan struct{}
}

func countAdmits(t *testing.T, addr string) *admitCounter {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &admitCounter{done: make(chan struct{})}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	c.srv = &http.Server{Protocols: &protocols, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/Admit") || strings.HasSuffix(r.URL.Path, "/AdmitPods") {
			c.n.Add(1)
		}
		http.Error(w, "admission is down", http.StatusServiceUnavailable)
	})}
	go func() {
		defer close(c.done)
		_ = c.srv.Serve(l)
	}()
	t.Cleanup(c.close)
	return c
}

func (c *admitCounter) count() int { return int(c.n.Load()) }

// close stops serving and frees the address; it is safe to call twice.
func (c *admitCounter) close() {
	_ = c.srv.Close()
	<-c.done
}

// sandboxesOf counts the runtime's sandboxes of the pod.
func (s *stack) sandboxesOf(uid string) int {
	n := 0
	for _, sb := range s.sandboxes() {
		if sb.GetLabels()["io.kubernetes.pod.uid"] == uid {
			n++
		}
	}
	return n
}

func condition(pod *v1.Pod, ct v1.PodConditionType) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == ct {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

const bigPod = `apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  containers:
  - name: app
    image: busybox:1.36
    resources:
      requests: {memory: 2Gi}
`

// A pod requesting more memory than the node has ends Failed with the
// kubelet's OutOfmemory rejection, and nothing of it reaches the runtime,
// while a pod that fits runs beside it.
func TestAdmissionRejectsOutOfMemory(t *testing.T) {
	s := admissionStack(t, stackOptions{}, func(root string) string {
		return admissionConfig(root, "2", "1Gi", 10, "")
	})
	uid := s.apply(bigPod).GetPods()[0].GetUid()
	pod := s.waitPod("big", 20*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if pod.Status.Reason != "OutOfmemory" {
		t.Errorf("reason = %q, want OutOfmemory", pod.Status.Reason)
	}
	// The kubelet's rejectPod message around the predicate's
	// InsufficientResourceError text.
	if want := "Pod was rejected: Node didn't have enough resource: memory, requested: 2147483648"; !strings.HasPrefix(pod.Status.Message, want) {
		t.Errorf("message = %q, want prefix %q", pod.Status.Message, want)
	}
	if n := s.sandboxesOf(uid); n != 0 {
		t.Errorf("%d sandboxes created for a rejected pod", n)
	}
	if reasons := s.eventReasons("big"); !strings.Contains(reasons, "OutOfmemory") {
		t.Errorf("events = %s, want an OutOfmemory event", reasons)
	}

	s.apply(webPod)
	s.waitPod("web", 20*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if n := s.sandboxesOf(uid); n != 0 {
		t.Errorf("the rejected pod got %d sandboxes later", n)
	}
}

const bestEffortPod = `apiVersion: v1
kind: Pod
metadata: {name: besteffort}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox:1.36
`

const criticalPod = `apiVersion: v1
kind: Pod
metadata: {name: critical}
spec:
  priorityClassName: system-node-critical
  priority: 2000001000
  containers:
  - name: app
    image: busybox:1.36
    resources:
      requests: {cpu: 100m, memory: 64Mi}
`

// On a node with room for one pod, a critical pod preempts the running
// BestEffort pod: the victim ends Failed with the kubelet's preemption
// status and DisruptionTarget condition, and the critical pod runs.
func TestAdmissionCriticalPodPreempts(t *testing.T) {
	s := admissionStack(t, stackOptions{}, func(root string) string {
		return admissionConfig(root, "2", "1Gi", 1, "")
	})
	s.apply(bestEffortPod)
	s.waitPod("besteffort", 20*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	criticalUID := s.apply(criticalPod).GetPods()[0].GetUid()
	s.waitPod("critical", 30*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	victim := s.waitPod("besteffort", 10*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if victim.Status.Reason != "Preempting" || victim.Status.Message != "Preempted in order to admit critical pod" {
		t.Errorf("victim status = %s/%q, want Preempting/%q", victim.Status.Reason, victim.Status.Message, "Preempted in order to admit critical pod")
	}
	c := condition(victim, v1.DisruptionTarget)
	if c == nil || c.Status != v1.ConditionTrue || c.Reason != v1.PodReasonTerminationByKubelet {
		t.Errorf("victim DisruptionTarget = %+v, want True/TerminationByKubelet", c)
	}
	for _, cs := range s.containers(string(victim.UID)) {
		if cs.GetState().String() == "CONTAINER_RUNNING" {
			t.Errorf("victim container %s still running", cs.GetMetadata().GetName())
		}
	}
	if reasons := s.eventReasons("besteffort"); !strings.Contains(reasons, "Preempting") {
		t.Errorf("victim events = %s, want Preempting", reasons)
	}
	if n := s.sandboxesOf(criticalUID); n != 1 {
		t.Errorf("critical pod has %d sandboxes, want 1", n)
	}
}

// Static pods go through admission too and are critical: on a full node a
// static pod preempts the BestEffort pod running there.
func TestAdmissionStaticPodPreempts(t *testing.T) {
	s := admissionStack(t, stackOptions{manifestDir: true}, func(root string) string {
		return admissionConfig(root, "2", "1Gi", 1, "")
	})
	s.apply(bestEffortPod)
	s.waitPod("besteffort", 20*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: static}\nspec:\n  containers: [{name: app, image: busybox:1.36}]\n"
	if err := os.WriteFile(filepath.Join(s.manifestDir(), "static.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	s.waitPod("static-node1", 30*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	victim := s.waitPod("besteffort", 10*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if victim.Status.Reason != "Preempting" {
		t.Errorf("victim reason = %q, want Preempting", victim.Status.Reason)
	}
}

// While admission cannot be reached a new pod waits, Pending with reason
// AdmissionUnavailable and PodScheduled=False, with nothing in the
// runtime; once admission comes up it is admitted and runs.
func TestAdmissionUnavailableWaits(t *testing.T) {
	s := admissionStack(t, stackOptions{}, func(root string) string {
		return admissionConfig(root, "2", "1Gi", 10, "")
	})
	addr := s.AdmissionAddr
	// Admission goes away before the pod arrives.
	s.Admission.Stop(10 * time.Second)
	uid := s.apply(webPod).GetPods()[0].GetUid()
	pod := s.waitPod("web", 20*time.Second, "waiting for admission", func(p *v1.Pod) bool {
		return p.Status.Reason == "AdmissionUnavailable"
	})
	if pod.Status.Phase != v1.PodPending || !strings.Contains(pod.Status.Message, addr) {
		t.Errorf("status = %s/%q, want Pending naming %s", pod.Status.Phase, pod.Status.Message, addr)
	}
	if c := condition(pod, v1.PodScheduled); c == nil || c.Status != v1.ConditionFalse || c.Reason != "AdmissionUnavailable" {
		t.Errorf("PodScheduled = %+v, want False/AdmissionUnavailable", c)
	}
	// It keeps waiting (retries fail) and nothing reaches the runtime. A
	// stand-in on admission's address fails each retry as before, and
	// counts them.
	retries := countAdmits(t, addr)
	waitFor(t, 20*time.Second, "two admission retries", func() (bool, string) {
		n := retries.count()
		return n >= 2, fmt.Sprintf("%d retries", n)
	})
	retries.close()
	if p := s.get("web"); p.Status.Phase != v1.PodPending {
		t.Errorf("phase = %s while admission is down", p.Status.Phase)
	}
	if n := s.sandboxesOf(uid); n != 0 {
		t.Errorf("%d sandboxes created before admission", n)
	}

	if err := s.Admission.Restart(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	pod = s.waitPod("web", 30*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if pod.Status.Reason == "AdmissionUnavailable" {
		t.Errorf("running pod still shows reason %s", pod.Status.Reason)
	}
	if c := condition(pod, v1.PodScheduled); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("PodScheduled = %+v, want True once admitted", c)
	}

	// Admission goes away and sync restarts: the running pod was admitted
	// before and keeps running, its container untouched.
	before := s.containers(uid)
	s.Admission.Stop(10 * time.Second)
	s.restartSync()
	// The restarted sync resyncs the pod twice after its first sync: it
	// had every chance to stop it.
	s.WaitResyncs(t, 2, 30*time.Second)
	if p := s.get("web"); p.Status.Phase != v1.PodRunning || p.Status.Reason != "" {
		t.Errorf("after a sync restart without admission: %s/%s, want Running", p.Status.Phase, p.Status.Reason)
	}
	after := s.containers(uid)
	if len(after) != len(before) || len(after) == 0 || after[0].GetId() != before[0].GetId() ||
		after[0].GetState().String() != "CONTAINER_RUNNING" {
		t.Errorf("containers changed across the restart: %d -> %d", len(before), len(after))
	}
}

const burstablePod = `apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: busybox:1.36
    resources:
      requests: {cpu: 100m}
`

// The eviction manager of splitlet-admission, under memory pressure, evicts
// a running pod and sync ends it Failed/Evicted. Pressure comes from a soft
// threshold no machine can satisfy (memory.available below 1Pi), which
// holds from the start; a Burstable pod is still admitted under memory
// pressure, as by the kubelet.
func TestAdmissionEvictionEndsPodEvicted(t *testing.T) {
	eviction := `  hard: {}
  soft: {memory.available: 1Pi}
  softGracePeriod: {memory.available: 1s}
  maxPodGracePeriodSeconds: 1
  evaluationInterval: 500ms
`
	s := admissionStack(t, stackOptions{}, func(root string) string {
		return admissionConfig(root, "2", "1Gi", 10, eviction)
	})
	s.apply(burstablePod)
	pod := s.waitPod("hog", 40*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if pod.Status.Reason != "Evicted" || !strings.Contains(pod.Status.Message, "memory") {
		t.Errorf("status = %s/%q, want Evicted naming memory", pod.Status.Reason, pod.Status.Message)
	}
	if c := condition(pod, v1.DisruptionTarget); c == nil || c.Reason != v1.PodReasonTerminationByKubelet {
		t.Errorf("DisruptionTarget = %+v, want TerminationByKubelet", c)
	}
	// The soft threshold's grace period (maxPodGracePeriodSeconds 1)
	// replaced the pod's 30 s: the container is stopped well before.
	waitFor(t, 15*time.Second, "evicted pod's containers stopped", func() (bool, string) {
		for _, cs := range s.containers(string(pod.UID)) {
			if cs.GetState().String() == "CONTAINER_RUNNING" {
				return false, cs.GetMetadata().GetName() + " running"
			}
		}
		return true, ""
	})
	if reasons := s.eventReasons("hog"); !strings.Contains(reasons, "Evicted") {
		t.Errorf("events = %s, want Evicted", reasons)
	}
	// Under memory pressure a BestEffort pod is rejected by eviction
	// admission (the kubelet's reason "Evicted").
	s.apply(bestEffortPod)
	be := s.waitPod("besteffort", 20*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if be.Status.Reason != "Evicted" || !strings.HasPrefix(be.Status.Message, "Pod was rejected: ") {
		t.Errorf("BestEffort pod under memory pressure: %s/%q, want a rejection", be.Status.Reason, be.Status.Message)
	}
}
