package apiserver

import (
	"context"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

// staticPod is a static pod of node n1 as the file source makes it.
func staticPod(name, hash string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, UID: types.UID(hash),
			Labels: map[string]string{"app": name},
			Annotations: map[string]string{
				defaults.ConfigSourceAnnotationKey: source.FileSourceName,
				defaults.ConfigHashAnnotationKey:   hash,
			}},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// listMirrors reads the API server's mirror pods into m, as the API source
// would, and returns them by name with their hash.
func listMirrors(t *testing.T, client *fake.Clientset, m *MirrorManager) map[string]string {
	t.Helper()
	list, err := client.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mirrors []*v1.Pod
	out := map[string]string{}
	for i := range list.Items {
		p := &list.Items[i]
		if IsMirrorPod(p) {
			mirrors = append(mirrors, p)
			out[p.Name] = p.Annotations[defaults.ConfigMirrorAnnotationKey]
		}
	}
	m.SetMirrors(mirrors)
	return out
}

func TestMirrorPods(t *testing.T) {
	ctx := t.Context()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}
	client := fake.NewClientset(node)
	pods := &fakeProvider{pods: []*v1.Pod{staticPod("etcd-n1", "h1"), testPod("from-api", "n1")}}
	var created []string
	m := NewMirrorManager(client, "n1", pods, func(p *v1.Pod) { created = append(created, p.Name) })
	reconcile := func() {
		t.Helper()
		if err := m.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Before the API source listed anything: nothing is done.
	reconcile()
	if got := listMirrors(t, client, m); len(got) != 0 {
		t.Fatalf("mirrors %v before the first list, want none", got)
	}

	reconcile()
	mirror, err := client.CoreV1().Pods("kube-system").Get(ctx, "etcd-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no mirror pod: %v", err)
	}
	owner := mirror.OwnerReferences
	if mirror.Annotations[defaults.ConfigMirrorAnnotationKey] != "h1" || mirror.Annotations[defaults.ConfigSourceAnnotationKey] != "file" ||
		mirror.Labels["app"] != "etcd-n1" || len(owner) != 1 || owner[0].Kind != "Node" || owner[0].UID != "node-uid" || owner[0].Controller == nil || !*owner[0].Controller ||
		mirror.Spec.NodeName != "n1" {
		t.Fatalf("mirror pod %+v, owners %+v", mirror.ObjectMeta, owner)
	}
	if got := listMirrors(t, client, m); !maps1(got, "etcd-n1", "h1") {
		t.Fatalf("mirrors %v", got)
	}
	// Only the static pod is mirrored.
	if _, err := client.CoreV1().Pods("default").Get(ctx, "from-api", metav1.GetOptions{}); err == nil {
		t.Fatal("a pod from the API server got a mirror")
	}

	if !slices.Equal(created, []string{"etcd-n1"}) {
		t.Errorf("told of created mirrors %v, want [etcd-n1]", created)
	}

	// Deleted by someone: created again.
	if err := client.CoreV1().Pods("kube-system").Delete(ctx, "etcd-n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	listMirrors(t, client, m)
	reconcile()
	if got := listMirrors(t, client, m); !maps1(got, "etcd-n1", "h1") {
		t.Fatalf("after a delete, mirrors %v", got)
	}

	// A graceful delete (deletionTimestamp set) is finished at once, then
	// the mirror comes back.
	cur, err := client.CoreV1().Pods("kube-system").Get(ctx, "etcd-n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.DeletionTimestamp = &metav1.Time{}
	if _, err := client.CoreV1().Pods("kube-system").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	listMirrors(t, client, m)
	reconcile()
	if got := listMirrors(t, client, m); len(got) != 0 {
		t.Fatalf("a mirror being deleted was not deleted at once: %v", got)
	}
	reconcile()
	if got := listMirrors(t, client, m); !maps1(got, "etcd-n1", "h1") {
		t.Fatalf("after a graceful delete, mirrors %v", got)
	}

	// The manifest changed: the old mirror goes, then the new one comes.
	pods.mu.Lock()
	pods.pods = []*v1.Pod{staticPod("etcd-n1", "h2")}
	pods.mu.Unlock()
	reconcile()
	if got := listMirrors(t, client, m); len(got) != 0 {
		t.Fatalf("after a manifest change, mirrors %v, want the old one deleted first", got)
	}
	reconcile()
	if got := listMirrors(t, client, m); !maps1(got, "etcd-n1", "h2") {
		t.Fatalf("after a manifest change, mirrors %v", got)
	}

	// The manifest is gone: so is the mirror.
	pods.mu.Lock()
	pods.pods = nil
	pods.mu.Unlock()
	reconcile()
	if got := listMirrors(t, client, m); len(got) != 0 {
		t.Fatalf("after the static pod went, mirrors %v", got)
	}
}

func maps1(m map[string]string, k, v string) bool { return len(m) == 1 && m[k] == v }

// The API source hands mirror pods to the MirrorSetter, never to the
// config mux: they are not run.
func TestPodSourceKeepsMirrorPodsApart(t *testing.T) {
	mirror := staticPod("etcd-n1", "h1")
	mirror.Annotations[defaults.ConfigMirrorAnnotationKey] = "h1"
	client := fake.NewClientset(testPod("a", "n1"), mirror)
	rec := &recordingSetter{}
	mirrors := &recordingMirrors{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go NewPodSource(client, "n1", rec, mirrors).Run(ctx)
	rec.waitFor(t, []string{"a"})
	if got := mirrors.names(); !slices.Equal(got, []string{"etcd-n1"}) {
		t.Errorf("mirror pods %v, want [etcd-n1]", got)
	}
}

type recordingMirrors struct {
	mu   sync.Mutex
	last []*v1.Pod
}

func (r *recordingMirrors) SetMirrors(p []*v1.Pod) { r.mu.Lock(); r.last = p; r.mu.Unlock() }

func (r *recordingMirrors) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.last {
		out = append(out, p.Name)
	}
	return out
}

// A static pod's status is written to its mirror pod, and waits while
// there is none for its manifest.
func TestStaticPodStatusGoesToTheMirror(t *testing.T) {
	ctx := t.Context()
	static := staticPod("etcd-n1", "h1")
	static.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.9"}
	client := fake.NewClientset()
	sm := NewStatusManager(client, &fakeProvider{pods: []*v1.Pod{static}}, StatusOptions{})
	if err := sm.syncPod(ctx, static); err != errNoMirrorYet {
		t.Fatalf("without a mirror: %v, want errNoMirrorYet", err)
	}
	mirror := staticPod("etcd-n1", "other")
	mirror.UID = "mirror-uid"
	mirror.Annotations[defaults.ConfigMirrorAnnotationKey] = "old-hash"
	if _, err := client.CoreV1().Pods("kube-system").Create(ctx, mirror, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sm.syncPod(ctx, static); err != errNoMirrorYet {
		t.Fatalf("with another manifest's mirror: %v, want errNoMirrorYet", err)
	}
	mirror.Annotations[defaults.ConfigMirrorAnnotationKey] = "h1"
	if _, err := client.CoreV1().Pods("kube-system").Update(ctx, mirror, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sm.syncPod(ctx, static); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: labels.Everything().String()})
	if err != nil || len(got.Items) != 1 || got.Items[0].Status.PodIP != "10.0.0.9" || got.Items[0].Status.Phase != v1.PodRunning {
		t.Fatalf("mirror status %+v (%v)", got, err)
	}
}
