package apiserver

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/splitlet/splitlet/services/sync/internal/defaults"
)

// podsByUID is a PodLookup over a map.
type podsByUID map[types.UID]*v1.Pod

var _ PodLookup = podsByUID(nil)

func (m podsByUID) GetPodByUID(uid types.UID) *v1.Pod { return m[uid] }

// chanSource is an EventSource over a channel the test feeds.
type chanSource chan v1.Event

var _ EventSource = chanSource(nil)

func (c chanSource) Subscribe(context.Context) <-chan v1.Event { return c }

func podEvent(uid types.UID, count int32, msg string) v1.Event {
	return v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "p." + string(uid)},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p", UID: uid},
		Reason:         "Started", Message: msg, Type: v1.EventTypeNormal, Count: count,
	}
}

func TestEventSink(t *testing.T) {
	apiPod := runningPod("p", "u-api")
	otherPod := runningPod("q", "u-other")
	otherPod.Annotations[defaults.ConfigSourceAnnotationKey] = "file"
	for _, tc := range []struct {
		desc      string
		events    []v1.Event
		wantName  string
		wantCount int32
	}{
		{desc: "event about an API server pod created", events: []v1.Event{podEvent("u-api", 1, "m")}, wantName: "p.u-api", wantCount: 1},
		{desc: "repeat updates the count", events: []v1.Event{podEvent("u-api", 1, "m"), podEvent("u-api", 3, "m")}, wantName: "p.u-api", wantCount: 3},
		{desc: "event about a pod of another source not written", events: []v1.Event{podEvent("u-other", 1, "m")}},
		{desc: "event about an unknown pod not written", events: []v1.Event{podEvent("u-gone", 1, "m")}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			client := fake.NewClientset()
			sink := NewEventSink(client, podsByUID{"u-api": apiPod, "u-other": otherPod})
			src := make(chanSource, len(tc.events))
			for _, ev := range tc.events {
				src <- ev
			}
			close(src)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			sink.Run(ctx, src)
			list, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantName == "" {
				if len(list.Items) != 0 {
					t.Fatalf("events written: %+v", list.Items)
				}
				return
			}
			if len(list.Items) != 1 || list.Items[0].Name != tc.wantName || list.Items[0].Count != tc.wantCount {
				t.Fatalf("events %+v, want one %s with count %d", list.Items, tc.wantName, tc.wantCount)
			}
		})
	}
}
