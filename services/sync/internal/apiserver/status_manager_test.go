package apiserver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/splitlet/splitlet/internal/testwait"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
)

// fakeProvider is a PodStatusProvider over a fixed pod list.
type fakeProvider struct {
	mu   sync.Mutex
	pods []*v1.Pod
	ch   chan podmanager.Event
}

var _ PodStatusProvider = (*fakeProvider)(nil)

func (f *fakeProvider) Subscribe(int) (<-chan podmanager.Event, func()) {
	return f.ch, func() {}
}

func (f *fakeProvider) GetPodsWithStatus() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pods
}

func (f *fakeProvider) GetPodByFullName(namespace, name string) *v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pods {
		if p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

// runningPod is pod name as the pod workers see it: from the apiserver
// source, with a Running status.
func runningPod(name string, uid types.UID) *v1.Pod {
	p := testPod(name, "n1")
	p.UID = uid
	p.Annotations = map[string]string{defaults.ConfigSourceAnnotationKey: SourceName}
	p.Status = v1.PodStatus{
		Phase: v1.PodRunning,
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "c", Image: "busybox", Ready: true,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}},
		}},
	}
	return p
}

func TestSyncBatch(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		apiUID    types.UID
		conflicts int
		source    string
		wantPhase v1.PodPhase
		wantRetry bool
	}{
		{desc: "status written", apiUID: "u1", source: SourceName, wantPhase: v1.PodRunning},
		{desc: "conflicts retried", apiUID: "u1", conflicts: 2, source: SourceName, wantPhase: v1.PodRunning},
		{desc: "pod replaced under the same name is left alone", apiUID: "other", source: SourceName, wantPhase: ""},
		{desc: "pods of other sources ignored", apiUID: "u1", source: "api", wantPhase: ""},
		{desc: "persistent failure retried in the next period", apiUID: "u1", conflicts: 100, source: SourceName, wantPhase: "", wantRetry: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			api := testPod("p", "n1")
			api.UID = tc.apiUID
			client := fake.NewClientset(api)
			left := tc.conflicts
			client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "status" || left == 0 {
					return false, nil, nil
				}
				left--
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("stale"))
			})
			pod := runningPod("p", "u1")
			pod.Annotations[defaults.ConfigSourceAnnotationKey] = tc.source
			m := NewStatusManager(client, &fakeProvider{pods: []*v1.Pod{pod}}, StatusOptions{})
			m.relist()
			m.SyncBatch(t.Context())

			got, err := client.CoreV1().Pods("default").Get(t.Context(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Phase != tc.wantPhase {
				t.Errorf("phase %q, want %q", got.Status.Phase, tc.wantPhase)
			}
			if tc.wantPhase == v1.PodRunning && (len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Running == nil) {
				t.Errorf("container statuses not written: %+v", got.Status.ContainerStatuses)
			}
			// A failed write is not dirty (another pod's change must not
			// retry it) until the period's retryFailed.
			m.mu.Lock()
			_, dirty := m.dirty[pod.UID]
			_, failed := m.failed[pod.UID]
			m.mu.Unlock()
			if dirty || failed != tc.wantRetry {
				t.Errorf("after sync: dirty %v, failed %v; want dirty false, failed %v", dirty, failed, tc.wantRetry)
			}
			m.retryFailed()
			m.mu.Lock()
			_, dirty = m.dirty[pod.UID]
			m.mu.Unlock()
			if dirty != tc.wantRetry {
				t.Errorf("dirty after the period = %v, want %v", dirty, tc.wantRetry)
			}
		})
	}
}

// A pod sync no longer has is never retried: under the Node authorizer
// its status write is refused forever, and retrying it throttled every
// other pod's status (the conformance run's minutes-Pending pods).
func TestDeletedPodForgotten(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no relationship found between node 'n1' and this object"))
	})
	pod := runningPod("p", "u1")
	m := NewStatusManager(client, &fakeProvider{pods: []*v1.Pod{pod}}, StatusOptions{})
	m.relist()
	m.SyncBatch(t.Context())
	m.mu.Lock()
	_, failed := m.failed[pod.UID]
	m.mu.Unlock()
	if !failed {
		t.Fatal("a refused write was not kept for a retry")
	}
	m.forget(pod)
	m.retryFailed()
	m.mu.Lock()
	left := len(m.dirty) + len(m.failed)
	m.mu.Unlock()
	if left != 0 {
		t.Errorf("%d statuses of a deleted pod left to write", left)
	}
}

func TestRunWritesPublishedStatus(t *testing.T) {
	api := testPod("p", "n1")
	api.UID = "u1"
	client := fake.NewClientset(api)
	prov := &fakeProvider{ch: make(chan podmanager.Event, 1)}
	m := NewStatusManager(client, prov, StatusOptions{SyncPeriod: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go m.Run(ctx)
	prov.ch <- podmanager.Event{Type: podmanager.Modified, Pod: runningPod("p", "u1")}
	testwait.For(t, "the published status reaches the API server", func() bool {
		got, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return err == nil && got.Status.Phase == v1.PodRunning
	})
}

func TestFinalizeDeletesWithUIDPrecondition(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		present bool
	}{
		{desc: "pod deleted", present: true},
		{desc: "pod already gone is fine", present: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var objs []runtime.Object
			if tc.present {
				p := testPod("p", "n1")
				p.UID = "u1"
				objs = append(objs, p)
			}
			client := fake.NewClientset(objs...)
			var opts *metav1.DeleteOptions
			client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				o := a.(k8stesting.DeleteActionImpl).DeleteOptions
				opts = &o
				return false, nil, nil
			})
			final := runningPod("p", "u1")
			final.Status.Phase = v1.PodSucceeded
			m := NewStatusManager(client, &fakeProvider{pods: []*v1.Pod{final}}, StatusOptions{})
			if err := m.Finalize(t.Context(), "default", "p", "u1"); err != nil {
				t.Fatalf("Finalize: %v", err)
			}
			if opts == nil || opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
				t.Fatalf("delete options %+v, want grace 0", opts)
			}
			if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "u1" {
				t.Errorf("delete preconditions %+v, want UID u1", opts.Preconditions)
			}
			if _, err := client.CoreV1().Pods("default").Get(t.Context(), "p", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("pod still there: %v", err)
			}
		})
	}
}

// A write that failed is retried with the pod's status as it is now: a
// newer status written since must not be overwritten by the old copy
// (a static pod's mirror stuck in Pending after its Running status had
// been written).
func TestRetryWritesTheLatestStatus(t *testing.T) {
	api := testPod("p", "n1")
	api.UID = "u1"
	client := fake.NewClientset(api)
	refuse := true
	client.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && refuse {
			refuse = false
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no relationship found yet"))
		}
		return false, nil, nil
	})
	pending := api.DeepCopy()
	pending.Annotations = map[string]string{defaults.ConfigSourceAnnotationKey: SourceName}
	pending.Status = v1.PodStatus{Phase: v1.PodPending}
	prov := &fakeProvider{pods: []*v1.Pod{pending}}
	m := NewStatusManager(client, prov, StatusOptions{})
	m.markDirty(pending)
	m.SyncBatch(t.Context())

	running := pending.DeepCopy()
	running.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1"}
	prov.mu.Lock()
	prov.pods = []*v1.Pod{running}
	prov.mu.Unlock()
	m.markDirty(running)
	m.SyncBatch(t.Context())
	m.retryFailed()
	m.SyncBatch(t.Context())

	got, err := client.CoreV1().Pods("default").Get(t.Context(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1.PodRunning || got.Status.PodIP != "10.0.0.1" {
		t.Errorf("status after the retry: phase %s, IP %q; want the newer Running status kept", got.Status.Phase, got.Status.PodIP)
	}
}
