package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(ns, name, image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "uid-" + "name"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: image}}},
	}
}

func TestStoreSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.db")
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(pod("default", "a", "busybox"), pod("kube-system", "b", "nginx")); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete("kube-system", "b"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pods, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Name != "a" || pods[0].Spec.Containers[0].Image != "busybox" {
		t.Fatalf("after reopen List() = %+v, want only default/a with image busybox", pods)
	}
	if _, err := st.Get("kube-system", "b"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("Get(deleted) error = %v, want ErrNotFound", err)
	}
}

func TestOpenRefusesSecondHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.db")
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := Open(path); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("second Open error = %v, want ErrUnavailable", err)
	}
}

func TestKeptStatusesSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.db")
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	start := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	kept := map[types.UID]*KeptStatus{
		"a": {Status: v1.PodStatus{Phase: v1.PodRunning, StartTime: &start, PodIP: "10.0.0.1"}, CreationTimestamp: start},
		"b": {Status: v1.PodStatus{Phase: v1.PodPending}},
	}
	if err := st.PutStatuses(kept); err != nil {
		t.Fatal(err)
	}
	if err := st.PutStatuses(map[types.UID]*KeptStatus{"b": nil}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Statuses()
	if err != nil {
		t.Fatal(err)
	}
	a := got["a"]
	if len(got) != 1 || a.Status.PodIP != "10.0.0.1" || !a.Status.StartTime.Equal(&start) || !a.CreationTimestamp.Equal(&start) {
		t.Fatalf("Statuses after reopen = %+v, want only a, as written", got)
	}
}
