package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
)

// memStore is a PodStore in memory that can be told to fail.
type memStore struct {
	mu   sync.Mutex
	pods map[string]*v1.Pod
	fail error
}

var _ PodStore = (*memStore)(nil)

func newMemStore() *memStore { return &memStore{pods: map[string]*v1.Pod{}} }

func (m *memStore) Put(pods ...*v1.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	for _, p := range pods {
		m.pods[p.Namespace+"/"+p.Name] = p.DeepCopy()
	}
	return nil
}

func (m *memStore) Delete(ns, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, ns+"/"+name)
	return nil
}

func (m *memStore) List() ([]*v1.Pod, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*v1.Pod
	for _, p := range m.pods {
		out = append(out, p.DeepCopy())
	}
	return out, nil
}

const podA = `apiVersion: v1
kind: Pod
metadata: {name: a}
spec:
  containers: [{name: c, image: busybox:1.36}]
`

func newTestAPISource(t *testing.T) (*APISource, *memStore, *PodConfig) {
	t.Helper()
	st := newMemStore()
	cfg := NewPodConfig(APISourceName)
	a, err := NewAPISource(context.Background(), st, "node1", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, st, cfg
}

func TestApply(t *testing.T) {
	for _, tc := range []struct {
		desc       string
		first      string
		second     string
		wantAction ApplyAction
		wantErr    string // substring; empty means success
	}{
		{desc: "create", second: podA, wantAction: Created},
		{desc: "same manifest again is unchanged", first: podA, second: podA, wantAction: Unchanged},
		{desc: "image change configures", first: podA, second: strings.Replace(podA, "1.36", "1.37", 1), wantAction: Configured},
		{desc: "other spec change is refused", first: podA,
			second: strings.Replace(podA, "image: busybox:1.36", "image: busybox:1.36, workingDir: /x", 1), wantErr: "document 0: "},
		{desc: "invalid second document applies nothing",
			second:  podA + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers: [{name: c}]\n",
			wantErr: "document 1: invalid argument: spec.containers[0].image: Required value"},
		{desc: "duplicate names in one manifest", second: podA + "---\n" + podA, wantErr: "Duplicate value"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			a, st, _ := newTestAPISource(t)
			ctx := context.Background()
			if tc.first != "" {
				if _, err := a.Apply(ctx, []byte(tc.first), false); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := st.List()
			res, err := a.Apply(ctx, []byte(tc.second), false)
			if tc.wantErr != "" {
				if !errdefs.IsInvalidArgument(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Apply error = %v, want InvalidArgument containing %q", err, tc.wantErr)
				}
				if after, _ := st.List(); len(after) != len(before) {
					t.Errorf("store went from %d to %d pods on a refused apply", len(before), len(after))
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if res[0].Action != tc.wantAction {
				t.Errorf("action = %v, want %v", res[0].Action, tc.wantAction)
			}
			if res[0].Pod.UID == "" || res[0].Pod.Spec.NodeName != "node1" {
				t.Errorf("applied pod uid %q node %q, want a UID and node1", res[0].Pod.UID, res[0].Pod.Spec.NodeName)
			}
		})
	}
}

func TestApplyKeepsUIDAcrossUpdates(t *testing.T) {
	a, _, _ := newTestAPISource(t)
	ctx := context.Background()
	r1, err := a.Apply(ctx, []byte(podA), false)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.Apply(ctx, []byte(strings.Replace(podA, "1.36", "1.37", 1)), false)
	if err != nil {
		t.Fatal(err)
	}
	if r1[0].Pod.UID != r2[0].Pod.UID {
		t.Errorf("UID changed on update: %s -> %s", r1[0].Pod.UID, r2[0].Pod.UID)
	}
}

func TestApplyStoreFailureAppliesNothing(t *testing.T) {
	a, st, cfg := newTestAPISource(t)
	st.fail = errors.New("disk full")
	if _, err := a.Apply(context.Background(), []byte(podA), false); err == nil {
		t.Fatal("Apply succeeded although the store failed")
	}
	if got := drain(cfg); len(got) != 0 {
		t.Errorf("updates sent after a failed apply: %v", got)
	}
}

func TestDeleteGraceOnlyShrinks(t *testing.T) {
	a, st, _ := newTestAPISource(t)
	ctx := context.Background()
	if _, err := a.Apply(ctx, []byte(podA), false); err != nil {
		t.Fatal(err)
	}
	ten, five, twenty := int64(10), int64(5), int64(20)
	for _, step := range []struct {
		desc  string
		grace *int64
		want  int64
	}{
		{desc: "first delete sets the grace", grace: &ten, want: 10},
		{desc: "a shorter grace wins", grace: &five, want: 5},
		{desc: "a longer grace is ignored", grace: &twenty, want: 5},
	} {
		p, err := a.Delete(ctx, "default", "a", step.grace)
		if err != nil {
			t.Fatalf("%s: %v", step.desc, err)
		}
		if p.DeletionTimestamp == nil || *p.DeletionGracePeriodSeconds != step.want {
			t.Errorf("%s: deletion grace = %v, want %d", step.desc, p.DeletionGracePeriodSeconds, step.want)
		}
	}
	if _, err := a.Apply(ctx, []byte(podA), false); !errdefs.IsConflict(err) {
		t.Errorf("Apply of a pod being deleted: %v, want ErrConflict", err)
	}
	p, _ := a.Delete(ctx, "default", "a", nil)
	if err := a.Finalize(ctx, "default", "a", p.UID); err != nil {
		t.Fatal(err)
	}
	if pods, _ := st.List(); len(pods) != 0 {
		t.Errorf("store still holds %d pods after Finalize", len(pods))
	}
	if _, err := a.Delete(ctx, "default", "a", nil); !errdefs.IsNotFound(err) {
		t.Errorf("Delete after Finalize: %v, want ErrNotFound", err)
	}
}

// Concurrent Applies must not lose pods: each publish records its copy of the
// set in the mux in order, so no older copy can remove a pod a newer one
// added (found by the pod-start bench: pods never started, false DELETEs).
func TestConcurrentApplyLosesNoPod(t *testing.T) {
	a, _, cfg := newTestAPISource(t)
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			manifest := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p%d\nspec:\n  containers:\n  - {name: c, image: busybox:1.36}\n", i)
			if _, err := a.Apply(context.Background(), []byte(manifest), false); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	live := map[string]bool{}
	deadline := time.After(5 * time.Second)
	for len(live) < n {
		select {
		case u := <-cfg.Updates():
			for _, p := range u.Pods {
				switch u.Op {
				case ADD:
					live[p.Name] = true
				case REMOVE, DELETE:
					t.Fatalf("%s of %s while only applying", u.Op, p.Name)
				}
			}
		case <-deadline:
			t.Fatalf("%d of %d pods reached the sync loop", len(live), n)
		}
	}
}

// Set must not wait for the sync loop: the sync loop itself publishes (a
// finished deletion shrinks the API source's set), and a Set blocked on the
// channel only the sync loop reads would deadlock it.
func TestSetDoesNotWaitForReader(t *testing.T) {
	cfg := NewPodConfig(APISourceName)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 500 {
			cfg.Set(context.Background(), APISourceName, []*v1.Pod{testPod(fmt.Sprint(i), "x")})
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Set blocked with nobody reading Updates")
	}
	// Everything queued still arrives, in order: the first update adds pod 0.
	if u := <-cfg.Updates(); u.Op != ADD || string(u.Pods[0].UID) != "0" {
		t.Errorf("first update = %s %v, want ADD of pod 0", u.Op, u.Pods[0].UID)
	}
}
