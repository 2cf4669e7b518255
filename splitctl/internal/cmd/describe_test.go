package cmd

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podEvent(pod, typ, reason, msg string, count int32, first, last time.Duration) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: pod + "." + reason},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod},
		Type:           typ, Reason: reason, Message: msg, Count: count,
		Source:         corev1.EventSource{Component: "splitlet", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(testNow.Add(-first)),
		LastTimestamp:  metav1.NewTime(testNow.Add(-last)),
	}
}

func TestDescribePod(t *testing.T) {
	tests := []struct {
		desc     string
		args     []string
		pod      func() *corev1.Pod
		events   []*corev1.Event
		wantCode int
		// want are substrings of stdout with runs of spaces collapsed, in order.
		want    []string
		wantErr string
	}{
		{
			desc: "running pod with a restart and events",
			args: []string{"describe", "pod", "web"},
			pod:  func() *corev1.Pod { return samplePod("default", "web") },
			events: []*corev1.Event{
				podEvent("web", "Normal", "Pulled", "Container image \"busybox:1.36\" already present on machine", 1, 80*time.Second, 80*time.Second),
				podEvent("web", "Warning", "BackOff", "Back-off restarting failed container web", 3, 70*time.Second, 10*time.Second),
				podEvent("other", "Normal", "Started", "not this pod", 1, time.Second, time.Second),
			},
			want: []string{
				"Name: web\n",
				"Namespace: default\n",
				"Node: node-1/192.168.1.10\n",
				"Start Time: Wed, 04 Mar 2026 09:58:40 +0000\n",
				"Labels: app=web\n",
				"Annotations: note=kept\n",
				"Status: Running\n",
				"IP: 10.1.0.5\n",
				"Containers:\n web:\n",
				"Container ID: containerd://c1\n",
				"Image: busybox:1.36\n",
				"Port: 80/TCP\n",
				"State: Running\n Started: Wed, 04 Mar 2026 09:59:00 +0000\n",
				"Last State: Terminated\n Reason: Error\n Exit Code: 2\n",
				"Ready: True\n",
				"Restart Count: 1\n",
				"Conditions:\n Type Status\n Ready True \n",
				"QoS Class: Burstable\n",
				"Events:\n Type Reason Age From Message\n ---- ------ ---- ---- -------\n",
				"Normal Pulled 80s splitlet, node-1 Container image \"busybox:1.36\" already present on machine\n",
				"Warning BackOff 10s (x3 over 70s) splitlet, node-1 Back-off restarting failed container web\n",
			},
		},
		{
			desc: "terminating pod with init containers and no events",
			args: []string{"describe", "pods/web"},
			pod: func() *corev1.Pod {
				p := samplePod("default", "web")
				del := metav1.NewTime(testNow.Add(20 * time.Second))
				p.DeletionTimestamp = &del
				g := int64(30)
				p.DeletionGracePeriodSeconds = &g
				p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "setup",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
				return p
			},
			want: []string{
				"Status: Terminating (lasts 20s)\n",
				"Termination Grace Period: 30s\n",
				"Init Containers:\n setup:\n",
				"State: Terminated\n Reason: Completed\n Exit Code: 0\n",
				"Containers:\n web:\n",
				"Events: <none>\n",
			},
		},
		{
			desc:     "unknown pod",
			args:     []string{"describe", "pod", "nope"},
			pod:      func() *corev1.Pod { return samplePod("default", "web") },
			wantCode: 1,
			wantErr:  `Error from server (NotFound): pods "nope" not found`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			h.fake.SetPod(tc.pod())
			for _, ev := range tc.events {
				h.fake.AddEvent(ev)
			}
			r := h.run("", tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.wantCode, r.stderr)
			}
			out := collapse(r.stdout)
			pos := 0
			for _, w := range tc.want {
				i := strings.Index(out[pos:], w)
				if i < 0 {
					t.Errorf("describe output lacks %q after offset %d:\n%s", w, pos, r.stdout)
					continue
				}
				pos += i + len(w)
			}
			if strings.Contains(r.stdout, "not this pod") {
				t.Errorf("describe shows another pod's event:\n%s", r.stdout)
			}
			if tc.wantErr != "" && !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q, want %q", r.stderr, tc.wantErr)
			}
		})
	}
}

// collapse turns runs of spaces into one, so checks do not depend on the
// tabwriter's column widths.
func collapse(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == ' ' {
			if !space {
				b.WriteRune(r)
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}
