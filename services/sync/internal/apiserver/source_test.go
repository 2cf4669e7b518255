package apiserver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/splitlet/splitlet/internal/testwait"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// recordingSetter is a PodSetter keeping every set it was given.
type recordingSetter struct {
	mu   sync.Mutex
	sets [][]string
}

var _ PodSetter = (*recordingSetter)(nil)

func (r *recordingSetter) Set(_ context.Context, source string, pods []*v1.Pod) {
	if source != SourceName {
		panic("unexpected source " + source)
	}
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	r.mu.Lock()
	r.sets = append(r.sets, names)
	r.mu.Unlock()
}

// waitFor waits until the latest set equals want.
func (r *recordingSetter) waitFor(t *testing.T, want []string) {
	t.Helper()
	testwait.For(t, fmt.Sprintf("the pod sets end with %v", want), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.sets) > 0 && slices.Equal(r.sets[len(r.sets)-1], want)
	})
}

func testPod(name, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func TestPodSourceSendsFullSetOfNodePods(t *testing.T) {
	client := fake.NewClientset(testPod("a", "n1"), testPod("other", "n2"), testPod("b", "n1"))
	rec := &recordingSetter{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go NewPodSource(client, "n1", rec, nil).Run(ctx)

	rec.waitFor(t, []string{"a", "b"})

	if _, err := client.CoreV1().Pods("default").Create(ctx, testPod("c", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, []string{"a", "b", "c"})

	if err := client.CoreV1().Pods("default").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, []string{"b", "c"})
}

func TestPodSourceReportsEmptyNodeOnce(t *testing.T) {
	// An empty first list must still be reported: it is what lets the mux's
	// SeenAllSources turn true.
	client := fake.NewClientset(testPod("other", "n2"))
	rec := &recordingSetter{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go NewPodSource(client, "n1", rec, nil).Run(ctx)
	rec.waitFor(t, []string{})
}
