package apiserver_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A pod naming a RuntimeClass runs its sandbox with that class's runtime
// handler, and a pod whose class names a handler the runtime lacks is not
// run under the default handler instead: it stays Pending with the
// kubelet's FailedCreatePodSandBox event naming the handler. On containerd
// when hack/apiserver-e2e.sh gives one (its "runc" handler), else on the
// fake runtime, which knows "runc" too.
func TestPodsRunWithTheirRuntimeClassHandler(t *testing.T) {
	endpoint := os.Getenv(containerdEnv)
	image := "busybox:1.36"
	if endpoint != "" {
		image = busyboxImage()
	}
	client, s, node := nodeStackOn(t, endpoint)
	ctx := t.Context()
	ns := "default"
	suffix := node[len("splitlet-it-"):]
	missingHandler := "absent-" + suffix
	classes := map[string]string{"runc-" + suffix: "runc", "absent-" + suffix: missingHandler}
	for name, handler := range classes {
		if _, err := client.NodeV1().RuntimeClasses().Create(ctx,
			&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = client.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	create := func(name, class string) *v1.Pod {
		t.Helper()
		pod, err := client.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + suffix, Namespace: ns},
			Spec: v1.PodSpec{
				NodeName:                     node,
				RuntimeClassName:             &class,
				AutomountServiceAccountToken: new(false),
				Tolerations:                  []v1.Toleration{{Key: "splitlet.dev/agent", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
				Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: v1.PullIfNotPresent,
					Command: []string{"sleep", "3600"}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			zero := int64(0)
			_ = client.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
		return pod
	}
	sandboxesOf := func(pod *v1.Pod) []*runtimeapi.PodSandbox {
		t.Helper()
		resp, err := s.cri.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
			LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(pod.UID)},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetItems()
	}

	runs := create("runc", "runc-"+suffix)
	waitFor(t, 60*time.Second, "the runc-class pod Running", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, runs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodRunning, string(p.Status.Phase)
	})
	if sbs := sandboxesOf(runs); len(sbs) != 1 || sbs[0].GetRuntimeHandler() != "runc" {
		t.Errorf("the runc-class pod's sandboxes %v, want one with runtime handler runc", sbs)
	}

	refused := create("absent", "absent-"+suffix)
	waitFor(t, 60*time.Second, "FailedCreatePodSandBox naming the missing handler", func() (bool, string) {
		evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.uid=" + string(refused.UID) + ",reason=FailedCreatePodSandBox",
		})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, missingHandler) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d FailedCreatePodSandBox events, none naming %s", len(evs.Items), missingHandler)
	})
	p, err := client.CoreV1().Pods(ns).Get(ctx, refused.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending {
		t.Errorf("the pod of the missing handler is %s, want Pending", p.Status.Phase)
	}
	for _, sb := range sandboxesOf(refused) {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			t.Errorf("the pod of the missing handler has a ready sandbox %s (handler %q)", sb.GetId(), sb.GetRuntimeHandler())
		}
	}
}
