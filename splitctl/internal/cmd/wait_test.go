package cmd

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestApplyWait(t *testing.T) {
	runningPod := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}
	creating := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	}
	tests := []struct {
		desc     string
		args     []string
		steps    []map[string]func(*corev1.Pod) // applied in order once the wait watches
		wantCode int
		wantErr  []string // substrings of stderr, in order
		notErr   string
	}{
		{
			desc: "both pods reach Running, progress shows what is waited for",
			args: []string{"apply", "-f", "-", "--wait"},
			steps: []map[string]func(*corev1.Pod){
				{"a": creating},
				{"a": runningPod},
				{"b": runningPod},
			},
			wantErr: []string{"waiting for 2 pods: a (ContainerCreating), b (Pending)", "pod/a is Running", "pod/b is Running"},
		},
		{
			desc: "a finished pod ends the wait as Completed",
			args: []string{"apply", "-f", "-", "--wait"},
			steps: []map[string]func(*corev1.Pod){
				{"a": runningPod, "b": func(p *corev1.Pod) {
					p.Status.Phase = corev1.PodSucceeded
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c",
						State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
				}},
			},
			wantErr: []string{"pod/b is Completed"},
		},
		{
			desc: "a failed pod fails the wait",
			args: []string{"apply", "-f", "-", "--wait"},
			steps: []map[string]func(*corev1.Pod){
				{"a": runningPod, "b": func(p *corev1.Pod) {
					p.Status.Phase = corev1.PodFailed
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c",
						State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}
				}},
			},
			wantCode: 1,
			wantErr:  []string{"pod/b failed: Error", "error: pod/b failed"},
		},
		{
			desc:     "timeout names the pods still pending",
			args:     []string{"apply", "-f", "-", "--wait", "--timeout", "300ms"},
			steps:    []map[string]func(*corev1.Pod){{"a": runningPod}},
			wantCode: 1,
			wantErr:  []string{"pod/a is Running", "error: timed out waiting for the condition on pods/b"},
		},
		{
			desc: "a watch the server ends is reopened",
			args: []string{"apply", "-f", "-", "--wait"},
			steps: []map[string]func(*corev1.Pod){
				{"a": runningPod},
				{"": nil}, // end the watches
				{"b": runningPod},
			},
			wantErr: []string{"pod/a is Running", "pod/b is Running"},
		},
		{
			desc:    "without --wait nothing is watched",
			args:    []string{"apply", "-f", "-"},
			notErr:  "waiting",
			wantErr: []string{""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			// A clock that moves a second per reading, so the progress line
			// appears without the test sleeping through the quiet moment.
			var mu sync.Mutex
			clock := testNow
			h.now = func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				clock = clock.Add(time.Second)
				return clock
			}
			// The fake sends a watch's changes in order after its current
			// pods, so the steps need only wait for a watch to be open.
			watching := func() bool { return h.fake.WatcherCount() > 0 }
			go func() {
				if !waitUntil(t.Context(), watching) {
					return
				}
				for _, step := range tc.steps {
					for name, change := range step {
						if name == "" {
							h.fake.EndWatches()
							// Let the client watch again before the next change.
							if !waitUntil(t.Context(), watching) {
								return
							}
							continue
						}
						h.fake.UpdatePod("default", name, change)
					}
				}
			}()
			r := h.run(podYAML("a")+"---\n"+podYAML("b"), tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.wantCode, r.stderr)
			}
			if !strings.Contains(r.stdout, "pod/a created\npod/b created\n") {
				t.Errorf("stdout %q", r.stdout)
			}
			pos := 0
			for _, w := range tc.wantErr {
				i := strings.Index(r.stderr[pos:], w)
				if i < 0 {
					t.Errorf("stderr lacks %q after offset %d:\n%s", w, pos, r.stderr)
					continue
				}
				pos += i + len(w)
			}
			if tc.notErr != "" && strings.Contains(r.stderr, tc.notErr) {
				t.Errorf("stderr %q contains %q", r.stderr, tc.notErr)
			}
		})
	}
}
