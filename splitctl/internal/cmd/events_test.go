package cmd

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/splitctl/internal/podfake"
)

func TestEvents(t *testing.T) {
	tests := []struct {
		desc     string
		args     []string
		wantReq  *podv1.EventsRequest
		want     []string
		wantCode int
		wantErr  string
	}{
		{
			desc:    "namespace events, oldest first",
			args:    []string{"events"},
			wantReq: &podv1.EventsRequest{Namespace: "default"},
			want: []string{"LAST SEEN TYPE REASON OBJECT MESSAGE",
				"80s Normal Pulled pod/web image present",
				"10s (x3 over 70s) Warning BackOff pod/web Back-off restarting",
				"5s Normal Started pod/db started"},
		},
		{
			desc:    "--for one pod",
			args:    []string{"events", "--for", "pod/db"},
			wantReq: &podv1.EventsRequest{Namespace: "default", Name: "db"},
			want:    []string{"LAST SEEN TYPE REASON OBJECT MESSAGE", "5s Normal Started pod/db started"},
		},
		{
			desc:    "all namespaces",
			args:    []string{"events", "-A", "--for", "pod/db"},
			wantReq: &podv1.EventsRequest{Name: "db"},
			want:    []string{"NAMESPACE LAST SEEN TYPE REASON OBJECT MESSAGE", "default 5s Normal Started pod/db started"},
		},
		{
			desc:     "--for something that is not a pod",
			args:     []string{"events", "--for", "deployment/x"},
			wantCode: 1,
			wantErr:  "error: --for must be in resource/name form",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			// Added out of order: the table sorts by last seen.
			h.fake.AddEvent(podEvent("db", "Normal", "Started", "started", 1, 5*time.Second, 5*time.Second))
			h.fake.AddEvent(podEvent("web", "Normal", "Pulled", "image present", 1, 80*time.Second, 80*time.Second))
			h.fake.AddEvent(podEvent("web", "Warning", "BackOff", "Back-off restarting", 3, 70*time.Second, 10*time.Second))
			r := h.run("", tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.wantCode, r.stderr)
			}
			if tc.want != nil {
				var got []string
				for _, l := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
					got = append(got, strings.Join(strings.Fields(l), " "))
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("stdout:\n%s\nwant %q", r.stdout, tc.want)
				}
			}
			if tc.wantErr != "" && !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q, want %q", r.stderr, tc.wantErr)
			}
			if tc.wantReq != nil {
				got := podfake.LastRequest[*podv1.EventsRequest](h.fake)
				if got.GetNamespace() != tc.wantReq.GetNamespace() || got.GetName() != tc.wantReq.GetName() || got.GetFollow() {
					t.Errorf("EventsRequest = %v, want %v", got, tc.wantReq)
				}
			}
		})
	}
}

func TestEventsJSONRoundTrip(t *testing.T) {
	h := newHarness(t)
	want := podEvent("web", "Warning", "BackOff", "Back-off restarting", 3, 70*time.Second, 10*time.Second)
	h.fake.AddEvent(want)
	r := h.run("", "events", "-o", "json")
	var list struct {
		Kind  string         `json:"kind"`
		Items []corev1.Event `json:"items"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if list.Kind != "List" || len(list.Items) != 1 || list.Items[0].Reason != "BackOff" || list.Items[0].Count != 3 ||
		!list.Items[0].LastTimestamp.Equal(&want.LastTimestamp) {
		t.Errorf("got %+v", list)
	}
}
