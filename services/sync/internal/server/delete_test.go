package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

// notFoundSource is a PodSource that holds no pod.
type notFoundSource struct{}

func (notFoundSource) Apply(context.Context, []byte, bool) ([]source.AppliedPod, error) {
	return nil, errdefs.ErrNotImplemented
}

func (notFoundSource) Delete(_ context.Context, namespace, name string, _ *int64) (*v1.Pod, error) {
	return nil, fmt.Errorf("pod %s/%s: %w", namespace, name, errdefs.ErrNotFound)
}

// Deleting through the PodService a pod another source runs says where it
// must be deleted instead of answering NotFound; an unknown pod is still
// NotFound.
func TestDeleteOfAnotherSourcesPod(t *testing.T) {
	pods := podmanager.New()
	for name, src := range map[string]string{"static-node1": "file", "from-cluster": "apiserver"} {
		pods.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Annotations: map[string]string{"kubernetes.io/config.source": src},
		}})
	}
	srv := New(notFoundSource{}, pods, nil, nil)
	for _, tc := range []struct {
		desc, name string
		wantCode   connect.Code
		wantMsg    string
	}{
		{desc: "static pod", name: "static-node1", wantCode: connect.CodeFailedPrecondition, wantMsg: "remove its manifest from --manifest-dir"},
		{desc: "API server pod", name: "from-cluster", wantCode: connect.CodeFailedPrecondition, wantMsg: "through the Kubernetes API server"},
		{desc: "unknown pod", name: "absent", wantCode: connect.CodeNotFound, wantMsg: "default/absent"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := srv.Delete(context.Background(), connect.NewRequest(&podv1.DeleteRequest{Namespace: "default", Name: tc.name}))
			if connect.CodeOf(err) != tc.wantCode || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("Delete(%s) = %v, want %v containing %q", tc.name, err, tc.wantCode, tc.wantMsg)
			}
		})
	}
}
