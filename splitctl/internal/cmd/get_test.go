package cmd

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// samplePod is a running pod with fields from many parts of core/v1, so a
// lossy conversion would show in the round-trip tests.
func samplePod(ns, name string) *corev1.Pod {
	grace := int64(15)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: types.UID("uid-" + name),
			Labels:            map[string]string{"app": name},
			Annotations:       map[string]string{"note": "kept"},
			CreationTimestamp: metav1.NewTime(testNow.Add(-90 * time.Second)),
		},
		Spec: corev1.PodSpec{
			NodeName:                      "node-1",
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "web", Image: "busybox:1.36", Command: []string{"httpd", "-f"},
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("250m")}},
			}},
		},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			HostIP:    "192.168.1.10",
			PodIP:     "10.1.0.5",
			PodIPs:    []corev1.PodIP{{IP: "10.1.0.5"}},
			StartTime: &metav1.Time{Time: testNow.Add(-80 * time.Second)},
			QOSClass:  corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(testNow.Add(-70 * time.Second))},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "web", Ready: true, RestartCount: 1, Image: "busybox:1.36", ImageID: "sha256:abc", ContainerID: "containerd://c1",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(testNow.Add(-60 * time.Second))}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 2, Reason: "Error", StartedAt: metav1.NewTime(testNow.Add(-75 * time.Second)), FinishedAt: metav1.NewTime(testNow.Add(-65 * time.Second))}},
			}},
		},
	}
}

func TestGetTable(t *testing.T) {
	tests := []struct {
		desc     string
		args     []string
		wantCode int
		want     []string // lines of stdout, spaces collapsed
		wantErr  string
	}{
		{
			desc: "list in the default namespace",
			args: []string{"get", "pods"},
			want: []string{"NAME READY STATUS RESTARTS AGE", "web 1/1 Running 1 (65s ago) 90s"},
		},
		{
			desc: "one pod by name, resource/name form",
			args: []string{"get", "pod/web"},
			want: []string{"NAME READY STATUS RESTARTS AGE", "web 1/1 Running 1 (65s ago) 90s"},
		},
		{
			desc: "all namespaces adds NAMESPACE",
			args: []string{"get", "po", "-A"},
			want: []string{"NAMESPACE NAME READY STATUS RESTARTS AGE", "default web 1/1 Running 1 (65s ago) 90s", "other db 1/1 Running 1 (65s ago) 90s"},
		},
		{
			desc: "wide adds IP, NODE, NOMINATED NODE, READINESS GATES",
			args: []string{"get", "pods", "-o", "wide"},
			want: []string{"NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES", "web 1/1 Running 1 (65s ago) 90s 10.1.0.5 node-1 <none> <none>"},
		},
		{
			desc: "-o name",
			args: []string{"get", "pods", "-n", "other", "-o", "name"},
			want: []string{"pod/db"},
		},
		{
			desc:     "unknown pod: kubectl's NotFound message and exit 1",
			args:     []string{"get", "pod", "nope"},
			wantCode: 1,
			wantErr:  `Error from server (NotFound): pods "nope" not found`,
		},
		{
			desc:    "empty namespace",
			args:    []string{"get", "pods", "-n", "empty"},
			wantErr: "No resources found in empty namespace.",
		},
		{
			desc:     "unknown resource type",
			args:     []string{"get", "deployments"},
			wantCode: 1,
			wantErr:  `error: the server doesn't have a resource type "deployments"`,
		},
		{
			desc:     "unknown output format",
			args:     []string{"get", "pods", "-o", "toml"},
			wantCode: 1,
			wantErr:  `error: unable to match a printer suitable for the output format "toml"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			h.fake.SetPod(samplePod("default", "web"))
			h.fake.SetPod(samplePod("other", "db"))
			r := h.run("", tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit code %d, want %d (stderr %q)", r.code, tc.wantCode, r.stderr)
			}
			if tc.want != nil {
				var got []string
				for _, l := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
					got = append(got, strings.Join(strings.Fields(l), " "))
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("stdout:\n%s\nwant lines %q", r.stdout, tc.want)
				}
			}
			if tc.wantErr != "" && !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", r.stderr, tc.wantErr)
			}
		})
	}
}

func TestGetTableAligned(t *testing.T) {
	h := newHarness(t)
	h.fake.SetPod(samplePod("default", "web"))
	h.fake.SetPod(samplePod("default", "a-much-longer-name"))
	r := h.run("", "get", "pods")
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines: %q", len(lines), r.stdout)
	}
	col := strings.Index(lines[0], "READY")
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l[col:], "1/1") {
			t.Errorf("READY column not aligned at %d in %q", col, l)
		}
	}
}

func TestGetOutputRoundTrip(t *testing.T) {
	tests := []struct {
		desc   string
		args   []string
		decode func([]byte, any) error
		list   bool
	}{
		{desc: "json of one pod", args: []string{"get", "pod", "web", "-o", "json"}, decode: json.Unmarshal},
		{desc: "yaml of one pod", args: []string{"get", "pod", "web", "-o", "yaml"}, decode: func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) }},
		{desc: "json of the list", args: []string{"get", "pods", "-o", "json"}, decode: json.Unmarshal, list: true},
		{desc: "yaml of the list", args: []string{"get", "pods", "-o", "yaml"}, decode: func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) }, list: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			want := samplePod("default", "web")
			h.fake.SetPod(want)
			r := h.run("", tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var got corev1.Pod
			if tc.list {
				var list corev1.List
				if err := tc.decode([]byte(r.stdout), &list); err != nil {
					t.Fatalf("decoding list: %v\n%s", err, r.stdout)
				}
				if list.Kind != "List" || len(list.Items) != 1 {
					t.Fatalf("got kind %q with %d items", list.Kind, len(list.Items))
				}
				if err := json.Unmarshal(list.Items[0].Raw, &got); err != nil {
					t.Fatal(err)
				}
			} else if err := tc.decode([]byte(r.stdout), &got); err != nil {
				t.Fatalf("decoding pod: %v\n%s", err, r.stdout)
			}
			// Quantities compare by value, not by their cached string form.
			wantJSON, _ := json.Marshal(want)
			gotJSON, _ := json.Marshal(&got)
			if string(wantJSON) != string(gotJSON) {
				t.Errorf("round trip changed the pod:\n got %s\nwant %s", gotJSON, wantJSON)
			}
		})
	}
}

func TestGetWatch(t *testing.T) {
	h := newHarness(t)
	h.fake.SetPod(samplePod("default", "web"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result)
	out := new(syncBuffer)
	go func() { done <- h.runCtx(ctx, "", out, "get", "pods", "-w") }()
	// Wait for the watch to be open, then change the pod.
	if !waitUntil(t.Context(), func() bool { return h.fake.WatcherCount() > 0 }) {
		t.Fatal("the watch never opened")
	}
	h.fake.UpdatePod("default", "web", func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].Ready = false
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	})
	// Stop once the client has printed the changed pod's row.
	printed := waitUntil(t.Context(), func() bool { return strings.Contains(out.String(), "CrashLoopBackOff") })
	cancel()
	r := <-done
	if !printed {
		t.Fatalf("no CrashLoopBackOff row within 5s of the change:\n%s", r.stdout)
	}
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") ||
		!strings.Contains(lines[1], "Running") || !strings.Contains(lines[2], "CrashLoopBackOff") {
		t.Errorf("watch output:\n%s\nwant a header, a Running row, then a CrashLoopBackOff row", r.stdout)
	}
}
