package apiserver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestLookupRuntimeHandler(t *testing.T) {
	client := fake.NewClientset(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"})
	o := NewObjects(client, ObjectsOptions{})
	go o.Run(t.Context())
	name := func(s string) *string { return &s }

	for _, tc := range []struct {
		desc    string
		class   *string
		handler string
	}{
		{"no runtimeClassName", nil, ""},
		{"an empty runtimeClassName", name(""), ""},
		{"an existing class", name("gvisor"), "runsc"},
	} {
		got, err := o.LookupRuntimeHandler(t.Context(), tc.class)
		if err != nil || got != tc.handler {
			t.Errorf("%s: got %q, %v; want %q", tc.desc, got, err, tc.handler)
		}
	}

	_, err := o.LookupRuntimeHandler(t.Context(), name("missing"))
	if !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), `runtimeclass.node.k8s.io "missing" not found`) {
		t.Errorf("a missing class: got %v, want the API server's NotFound", err)
	}

	// A class made later is seen once the watch delivers it.
	if _, err := client.NodeV1().RuntimeClasses().Create(t.Context(),
		&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata-qemu"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool {
		got, err := o.LookupRuntimeHandler(t.Context(), name("kata"))
		return err == nil && got == "kata-qemu"
	})
}

func TestLookupRuntimeHandlerBeforeTheFirstList(t *testing.T) {
	// Never run: the RuntimeClasses are never listed.
	o := NewObjects(fake.NewClientset(), ObjectsOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	class := "gvisor"
	_, err := o.LookupRuntimeHandler(ctx, &class)
	if !errors.Is(err, errdefs.ErrUnavailable) || errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("got %v, want unavailable (not a missing class)", err)
	}
}
