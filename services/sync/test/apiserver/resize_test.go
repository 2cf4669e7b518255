package apiserver_test

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An in-place resize through the API server's resize subresource is
// granted and applied to the running container without a restart: its
// status reports the new resources as allocated and actual, and no resize
// condition is left once observedGeneration caught up.
func TestResizeIsAppliedInPlace(t *testing.T) {
	client, _, node := nodeStack(t)
	ctx := t.Context()
	ns, name := "default", "resize-"+node[len("splitlet-it-"):]
	t.Cleanup(func() {
		zero := int64(0)
		_ = client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	cpu := func(q string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)} }
	_, err := client.CoreV1().Pods(ns).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:    node,
			Tolerations: []v1.Toleration{{Key: "splitlet.dev/agent", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			Containers: []v1.Container{{Name: "app", Image: "busybox:1.36",
				Resources: v1.ResourceRequirements{Requests: cpu("100m"), Limits: cpu("100m")}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "pod Running", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodRunning, string(p.Status.Phase)
	})

	patch := []byte(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"200m"}}}]}}`)
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatalf("resize: %v", err)
	}
	var pod *v1.Pod
	waitFor(t, 30*time.Second, "resize applied", func() (bool, string) {
		if pod, err = client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		if pod.Status.ObservedGeneration < pod.Generation {
			return false, "observedGeneration behind"
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
				return false, string(c.Type) + " " + c.Reason + ": " + c.Message
			}
		}
		cs := pod.Status.ContainerStatuses[0]
		if cs.Resources == nil {
			return false, "no resources in the status"
		}
		return cs.Resources.Limits.Cpu().String() == "200m", "limits cpu " + cs.Resources.Limits.Cpu().String()
	})
	cs := pod.Status.ContainerStatuses[0]
	if got := cs.AllocatedResources.Cpu().String(); got != "200m" {
		t.Errorf("allocatedResources cpu %s after the resize, want 200m", got)
	}
	if cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("the container restarted or stopped: restarts %d, state %+v", cs.RestartCount, cs.State)
	}
}
