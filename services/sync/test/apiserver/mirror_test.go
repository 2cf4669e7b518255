package apiserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A static pod from sync's manifest directory appears in the API server as
// a mirror pod (the kubelet's annotations, owned by the Node, with the
// static pod's status), comes back when the mirror is deleted, and goes
// when the manifest goes.
func TestMirrorPodsOfStaticPods(t *testing.T) {
	manifests := t.TempDir()
	client, _, node := nodeStack(t, "--manifest-dir="+manifests, "--file-check-frequency=1s")
	ctx := t.Context()
	manifest := filepath.Join(manifests, "web.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: static-web
  labels: {app: static-web}
spec:
  containers:
  - name: app
    image: busybox:1.36
    command: [sleep, "3600"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	name := "static-web-" + node
	pods := client.CoreV1().Pods("default")
	var first types.UID
	waitFor(t, time.Minute, "a Running mirror pod", func() (bool, string) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		owners := p.OwnerReferences
		if p.Annotations[v1.MirrorPodAnnotationKey] == "" || p.Annotations["kubernetes.io/config.source"] != "file" ||
			len(owners) != 1 || owners[0].Kind != "Node" || owners[0].Name != node {
			t.Fatalf("mirror pod metadata %+v", p.ObjectMeta)
		}
		first = p.UID
		return p.Status.Phase == v1.PodRunning, fmt.Sprintf("phase %q", p.Status.Phase)
	})

	if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the mirror pod re-created", func() (bool, string) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.UID != first && p.Status.Phase == v1.PodRunning, fmt.Sprintf("uid %s, phase %q", p.UID, p.Status.Phase)
	})

	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the mirror pod deleted with its manifest", func() (bool, string) {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
