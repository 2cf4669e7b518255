package kuberuntime

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

func memory(q string) v1.ResourceRequirements {
	return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(q)}}
}

// TestContainersRecordTheirResources: a container's resources go on it as
// an annotation and come back in its status as its actuated resources.
func TestContainersRecordTheirResources(t *testing.T) {
	ctx := context.Background()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "i", Resources: memory("64Mi")}}}}
	annotations := newContainerAnnotations(ctx, &pod.Spec.Containers[0], pod, 0)
	got := getContainerInfoFromAnnotations(ctx, annotations).Resources
	if got == nil || !container.SameResources(got, &pod.Spec.Containers[0].Resources) {
		t.Fatalf("recorded resources %+v, want the spec's 64Mi limit", got)
	}
}
