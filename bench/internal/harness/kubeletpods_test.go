package harness

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestKubeletPodsObserverPoll(t *testing.T) {
	named := func(name string, p *v1.Pod) v1.Pod {
		p.Name = name
		return *p
	}
	for _, tc := range []struct {
		desc        string
		body        string // raw answer; empty: the pods below as a PodList
		pods        []v1.Pod
		wantRunning []string
		wantErr     bool
	}{
		{desc: "static pods with all containers running are marked under their bench names",
			pods: []v1.Pod{
				named("bench-00000-benchnode", benchPod(1, runningState)),
				named("bench-00001-benchnode", benchPod(2, runningState, waitingState)),
				named("bench-00002-benchnode", benchPod(1)),
			},
			wantRunning: []string{"bench-00000"}},
		{desc: "an exited container is not running",
			pods: []v1.Pod{named("bench-00000-benchnode", benchPod(1, exitedState))}},
		{desc: "an undecodable answer is an error", body: "{", wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tc.body != "" {
					_, _ = w.Write([]byte(tc.body))
					return
				}
				_ = json.NewEncoder(w).Encode(v1.PodList{Items: tc.pods})
			}))
			defer srv.Close()
			o := newKubeletPodsObserver(srv.URL+"/pods", time.Second, staticPodName(benchNode))
			err := o.poll(t.Context())
			if (err != nil) != tc.wantErr {
				t.Fatalf("poll error %v, wantErr %v", err, tc.wantErr)
			}
			got := o.running.names()
			if len(got) != len(tc.wantRunning) {
				t.Fatalf("running %v, want %v", got, tc.wantRunning)
			}
			for _, name := range tc.wantRunning {
				if _, ok := o.running.get(name); !ok {
					t.Errorf("%s not marked running (marked: %v)", name, got)
				}
			}
		})
	}
}

func TestKubeletPodsInterval(t *testing.T) {
	for _, tc := range []struct {
		desc string
		set  time.Duration
		n    int
		want time.Duration
	}{
		{desc: "a few pods: the 100 ms floor", n: 20, want: 100 * time.Millisecond},
		{desc: "110 pods: 1 ms per pod", n: 110, want: 110 * time.Millisecond},
		{desc: "1000 pods: 1 s", n: 1000, want: time.Second},
		{desc: "set: used as is", set: 50 * time.Millisecond, n: 1000, want: 50 * time.Millisecond},
		{desc: "negative: not read", set: -1, n: 110, want: -1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := kubeletPodsInterval(Config{KubeletPodsInterval: tc.set}, tc.n); got != tc.want {
				t.Errorf("interval %v, want %v", got, tc.want)
			}
		})
	}
}
