package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
)

// runningPod is a pod as sync reports it once its container runs: the
// bench's manifest, defaulted, with a full status. Times are whole seconds
// because the JSON form keeps no more.
func runningPod(tb testing.TB, name string) *v1.Pod {
	tb.Helper()
	var pod v1.Pod
	manifest := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"default","uid":"uid-` + name + `",` +
		`"labels":{"app":"bench"},"annotations":{"kubernetes.io/config.source":"api"}},` +
		`"spec":{"restartPolicy":"Always","terminationGracePeriodSeconds":1,"containers":[{"name":"sleep","image":"busybox:1.36",` +
		`"imagePullPolicy":"IfNotPresent","command":["sleep","infinity"]}]}}`
	if err := json.Unmarshal([]byte(manifest), &pod); err != nil {
		tb.Fatal(err)
	}
	defaults.SetDefaults_Pod(&pod)
	now := metav1.NewTime(time.Unix(1_700_000_000, 0))
	pod.CreationTimestamp = now
	pod.Status = v1.PodStatus{
		Phase:  v1.PodRunning,
		HostIP: "10.0.0.1", HostIPs: []v1.HostIP{{IP: "10.0.0.1"}},
		PodIP: "10.88.0.7", PodIPs: []v1.PodIP{{IP: "10.88.0.7"}},
		StartTime: &now,
		QOSClass:  v1.PodQOSBestEffort,
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "sleep", Ready: true, Started: new(true),
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}},
			Image:       "docker.io/library/busybox:1.36",
			ImageID:     "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			ContainerID: "containerd://fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
		}},
	}
	for _, typ := range []v1.PodConditionType{"PodReadyToStartContainers", v1.PodInitialized, v1.ContainersReady, v1.PodReady, v1.PodScheduled} {
		pod.Status.Conditions = append(pod.Status.Conditions, v1.PodCondition{Type: typ, Status: v1.ConditionTrue, LastTransitionTime: now})
	}
	return &pod
}

// watchClient serves a Server over pods with Connect and returns a client.
func watchClient(t *testing.T, pods PodLister) podv1connect.PodServiceClient {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(NewHandler(New(nil, pods, nil, nil)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return podv1connect.NewPodServiceClient(srv.Client(), srv.URL)
}

// receivePod reads the next pod-carrying message of a watch (skipping the
// headers-only first one) and checks the encoding set the field it
// promises and only that one.
func receivePod(t *testing.T, stream *connect.ServerStreamForClient[podv1.WatchResponse], protobuf bool) (podv1.WatchEventType, *v1.Pod) {
	t.Helper()
	for stream.Receive() {
		msg := stream.Msg()
		if msg.GetPod() == nil && msg.GetPodProtobuf() == nil {
			continue
		}
		if protobuf {
			if msg.GetPod() != nil {
				t.Errorf("protobuf watcher got a Struct too")
			}
			var pod v1.Pod
			if err := pod.Unmarshal(msg.GetPodProtobuf()); err != nil {
				t.Fatalf("decode pod_protobuf: %v", err)
			}
			return msg.GetType(), &pod
		}
		if msg.GetPodProtobuf() != nil {
			t.Errorf("Struct watcher got pod_protobuf too")
		}
		raw, err := msg.GetPod().MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var pod v1.Pod
		if err := json.Unmarshal(raw, &pod); err != nil {
			t.Fatalf("decode Struct: %v", err)
		}
		if pod.APIVersion != "v1" || pod.Kind != "Pod" {
			t.Errorf("Struct pod has apiVersion %q kind %q, want v1 Pod", pod.APIVersion, pod.Kind)
		}
		return msg.GetType(), &pod
	}
	t.Fatalf("watch ended: %v", stream.Err())
	return 0, nil
}

// A watcher asking for the protobuf encoding sees the same pods, and the
// same changes, as a Struct watcher; a watcher asking for nothing gets the
// Struct.
func TestWatchEncodings(t *testing.T) {
	pods := podmanager.New()
	pod := runningPod(t, "web")
	pods.AddPod(pod)
	pods.SetPodStatus(pod.UID, pod.Status)
	client := watchClient(t, pods)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	type watcher struct {
		desc     string
		encoding podv1.WatchEncoding
		protobuf bool
		stream   *connect.ServerStreamForClient[podv1.WatchResponse]
	}
	watchers := []*watcher{
		{desc: "default", encoding: podv1.WatchEncoding_WATCH_ENCODING_UNSPECIFIED},
		{desc: "struct", encoding: podv1.WatchEncoding_WATCH_ENCODING_STRUCT},
		{desc: "kubernetes protobuf", encoding: podv1.WatchEncoding_WATCH_ENCODING_KUBERNETES_PROTOBUF, protobuf: true},
	}
	for _, w := range watchers {
		stream, err := client.Watch(ctx, connect.NewRequest(&podv1.WatchRequest{Encoding: w.encoding}))
		if err != nil {
			t.Fatalf("%s: Watch: %v", w.desc, err)
		}
		t.Cleanup(func() { stream.Close() })
		w.stream = stream
	}

	// Every watcher is subscribed once it had its ADDED event; then a
	// status change must reach each as MODIFIED.
	check := func(step string, wantType podv1.WatchEventType, want *v1.Pod) {
		t.Helper()
		var reference *v1.Pod // the default watcher's view
		for _, w := range watchers {
			typ, got := receivePod(t, w.stream, w.protobuf)
			if typ != wantType {
				t.Errorf("%s, %s watcher: type %v, want %v", step, w.desc, typ, wantType)
			}
			if got.Name != want.Name || got.UID != want.UID || !equality.Semantic.DeepEqual(got.Status, want.Status) {
				t.Errorf("%s, %s watcher: got %s/%s status %+v, want %s/%s status %+v",
					step, w.desc, got.Name, got.UID, got.Status, want.Name, want.UID, want.Status)
			}
			if reference == nil {
				reference = got
			} else if !equality.Semantic.DeepEqual(got.Spec, reference.Spec) {
				t.Errorf("%s, %s watcher: spec differs from the Struct watcher's:\n%+v\n%+v", step, w.desc, got.Spec, reference.Spec)
			}
		}
	}
	check("initial list", podv1.WatchEventType_WATCH_EVENT_TYPE_ADDED, pod)

	changed := pod.DeepCopy()
	changed.Status.ContainerStatuses[0].Ready = false
	changed.Status.ContainerStatuses[0].RestartCount = 3
	changed.Status.Conditions[3].Status = v1.ConditionFalse
	pods.SetPodStatus(pod.UID, changed.Status)
	check("status change", podv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, changed)
}

func TestWatchRefusesUnknownEncoding(t *testing.T) {
	client := watchClient(t, podmanager.New())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := client.Watch(ctx, connect.NewRequest(&podv1.WatchRequest{Encoding: podv1.WatchEncoding(42)}))
	if err == nil {
		defer stream.Close()
		for stream.Receive() {
			t.Errorf("message on a refused watch: %v", stream.Msg())
		}
		err = stream.Err()
	}
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "encoding") || !strings.Contains(err.Error(), "42") {
		t.Errorf("Watch with encoding 42 = %v, want InvalidArgument naming the field and the value", err)
	}
}

// BenchmarkWatchEncode is the cost of one watch event for a running pod,
// encoded as the watcher asked: "encode" builds the WatchResponse, "wire"
// also marshals it as Send does.
func BenchmarkWatchEncode(b *testing.B) {
	pod := runningPod(b, "bench-00001")
	for _, tc := range []struct {
		desc     string
		encoding podv1.WatchEncoding
	}{
		{desc: "struct", encoding: podv1.WatchEncoding_WATCH_ENCODING_STRUCT},
		{desc: "protobuf", encoding: podv1.WatchEncoding_WATCH_ENCODING_KUBERNETES_PROTOBUF},
	} {
		for _, wire := range []bool{false, true} {
			name := tc.desc + "/encode"
			if wire {
				name = tc.desc + "/wire"
			}
			b.Run(name, func(b *testing.B) {
				enc, err := newWatchEncoder(tc.encoding)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				var size int
				for b.Loop() {
					resp, err := enc.encode(podv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, pod)
					if err != nil {
						b.Fatal(err)
					}
					if wire {
						out, err := proto.Marshal(resp)
						if err != nil {
							b.Fatal(err)
						}
						size = len(out)
					}
				}
				if wire {
					b.ReportMetric(float64(size), "bytes/event")
				}
			})
		}
	}
}

// Past the cap on open watches one more is refused with ResourceExhausted;
// once one closes, a new one is served again.
func TestWatchesOverTheCapAreRefused(t *testing.T) {
	pods := podmanager.New()
	pod := runningPod(t, "web")
	pods.AddPod(pod)
	pods.SetPodStatus(pod.UID, pod.Status)
	srv := New(nil, pods, nil, nil)
	srv.maxWatchers = 2
	mux := http.NewServeMux()
	mux.Handle(NewHandler(srv))
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	client := podv1connect.NewPodServiceClient(hs.Client(), hs.URL)
	open := func() (*connect.ServerStreamForClient[podv1.WatchResponse], context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := client.Watch(ctx, connect.NewRequest(&podv1.WatchRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		return stream, cancel
	}
	first, closeFirst := open()
	receivePod(t, first, false)
	second, closeSecond := open()
	defer closeSecond()
	receivePod(t, second, false)
	third, closeThird := open()
	defer closeThird()
	if third.Receive() {
		// The first message is the headers-only one; the error follows.
		for third.Receive() {
		}
	}
	if code := connect.CodeOf(third.Err()); code != connect.CodeResourceExhausted {
		t.Fatalf("third watch: %v, want resource_exhausted", third.Err())
	}
	closeFirst()
	first.Close()
	waitWatchers(t, srv, 1)
	again, closeAgain := open()
	defer closeAgain()
	receivePod(t, again, false)
}

// waitWatchers waits until srv counts n open watches (a closed stream's
// handler returns after the client has gone).
func waitWatchers(t *testing.T, srv *Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for srv.watchers.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d watches open, want %d", srv.watchers.Load(), n)
		}
		<-tick.C
	}
}
