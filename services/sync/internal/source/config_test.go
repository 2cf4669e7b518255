package source

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func testPod(uid, image string, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: image}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// drain returns the updates queued so far as "OP:uid,uid" strings. The mux
// forwards asynchronously, so it reads until nothing has come for a while.
func drain(c *PodConfig) []string {
	var out []string
	for {
		select {
		case u := <-c.Updates():
			var uids []string
			for _, p := range u.Pods {
				uids = append(uids, string(p.UID))
			}
			out = append(out, fmt.Sprintf("%s:%s", u.Op, strings.Join(uids, ",")))
		case <-time.After(100 * time.Millisecond):
			return out
		}
	}
}

func TestPodConfigSet(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		desc   string
		before []*v1.Pod
		after  []*v1.Pod
		want   []string
	}{
		{
			desc:  "new pods are added",
			after: []*v1.Pod{testPod("a", "x"), testPod("b", "x")},
			want:  []string{"ADD:a,b"},
		},
		{
			desc:   "an unchanged set sends nothing",
			before: []*v1.Pod{testPod("a", "x")},
			after:  []*v1.Pod{testPod("a", "x")},
		},
		{
			desc:   "a spec change is an update",
			before: []*v1.Pod{testPod("a", "x")},
			after:  []*v1.Pod{testPod("a", "y")},
			want:   []string{"UPDATE:a"},
		},
		{
			desc:   "a pod gone from the set is removed, in the kubelet's order before adds",
			before: []*v1.Pod{testPod("a", "x")},
			after:  []*v1.Pod{testPod("b", "x")},
			want:   []string{"REMOVE:a", "ADD:b"},
		},
		{
			desc:   "a deletion timestamp is a delete",
			before: []*v1.Pod{testPod("a", "x")},
			after:  []*v1.Pod{testPod("a", "x", func(p *v1.Pod) { p.DeletionTimestamp = &now })},
			want:   []string{"DELETE:a"},
		},
		{
			desc:   "a status-only change is a reconcile",
			before: []*v1.Pod{testPod("a", "x")},
			after:  []*v1.Pod{testPod("a", "x", func(p *v1.Pod) { p.Status.Phase = v1.PodRunning })},
			want:   []string{"RECONCILE:a"},
		},
		{
			desc:   "a new config.seen annotation alone is no change",
			before: []*v1.Pod{testPod("a", "x", func(p *v1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.seen": "t1"} })},
			after:  []*v1.Pod{testPod("a", "x", func(p *v1.Pod) { p.Annotations = map[string]string{"kubernetes.io/config.seen": "t2"} })},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ctx := context.Background()
			c := NewPodConfig("file")
			c.Set(ctx, "file", tc.before)
			drain(c)
			c.Set(ctx, "file", tc.after)
			got := drain(c)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("updates = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodConfigSeenAllSources(t *testing.T) {
	c := NewPodConfig(FileSourceName, APISourceName)
	ctx := context.Background()
	c.Set(ctx, FileSourceName, nil)
	if c.SeenAllSources() {
		t.Fatal("SeenAllSources true after one of two sources reported")
	}
	c.Set(ctx, APISourceName, nil)
	if !c.SeenAllSources() {
		t.Fatal("SeenAllSources false after both sources reported, even with no pods")
	}
}

func TestPodConfigTagsSource(t *testing.T) {
	c := NewPodConfig(APISourceName)
	in := testPod("a", "x")
	c.Set(context.Background(), APISourceName, []*v1.Pod{in})
	u := <-c.Updates()
	if got := u.Pods[0].Annotations["kubernetes.io/config.source"]; got != APISourceName || u.Source != APISourceName {
		t.Errorf("config.source = %q, update source %q; want %q", got, u.Source, APISourceName)
	}
	if in.Annotations != nil {
		t.Errorf("Set modified the caller's pod: %v", in.Annotations)
	}
}

// A static pod has no creation time; the mux gives it the time it was first
// seen and keeps that time across updates, so kubectl-style AGE is right.
func TestPodConfigCreationTimestamp(t *testing.T) {
	c := NewPodConfig(FileSourceName)
	ctx := context.Background()
	c.Set(ctx, FileSourceName, []*v1.Pod{testPod("a", "x")})
	first := (<-c.Updates()).Pods[0].CreationTimestamp
	if first.IsZero() {
		t.Fatal("a new pod without creationTimestamp got none")
	}
	c.Set(ctx, FileSourceName, []*v1.Pod{testPod("a", "y")})
	if got := (<-c.Updates()).Pods[0].CreationTimestamp; !got.Equal(&first) {
		t.Errorf("creationTimestamp changed on update: %v, first %v", got, first)
	}
}
