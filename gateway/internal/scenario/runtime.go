package scenario

import (
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// version: the runtime answers Version with the v1 CRI API.
func (r *run) version(t *testing.T) {
	// The kubelet sends its own API version ("0.1.0") and checks the reply;
	// see kuberuntime's getTypedVersion.
	resp, err := r.env.Runtime.Version(r.ctx(t), &runtimeapi.VersionRequest{Version: "0.1.0"})
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	if resp.GetRuntimeApiVersion() != "v1" {
		t.Errorf("runtime_api_version = %q, want v1", resp.GetRuntimeApiVersion())
	}
	if resp.GetRuntimeName() == "" || resp.GetRuntimeVersion() == "" {
		t.Errorf("runtime name/version empty: %+v", resp)
	}
	t.Logf("runtime %s %s (CRI %s)", resp.GetRuntimeName(), resp.GetRuntimeVersion(), resp.GetRuntimeApiVersion())
}

// status: the runtime reports itself ready. NetworkReady is only logged: a
// containerd without CNI reports it false, and host-network pods, all this
// scenario runs, do not need it.
func (r *run) status(t *testing.T) {
	resp, err := r.env.Runtime.Status(r.ctx(t), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	conds := resp.GetStatus().GetConditions()
	ready := slices.IndexFunc(conds, func(c *runtimeapi.RuntimeCondition) bool {
		return c.GetType() == runtimeapi.RuntimeReady
	})
	if ready < 0 || !conds[ready].GetStatus() {
		t.Fatalf("RuntimeReady condition not true in %v", conds)
	}
	for _, c := range conds {
		t.Logf("condition %s=%v %s %s", c.GetType(), c.GetStatus(), c.GetReason(), c.GetMessage())
	}
}

// imagePresent: ImageStatus finds the busybox image, pulling it first when
// absent, as the kubelet's image manager does (EnsureImageExists).
func (r *run) imagePresent(t *testing.T) {
	spec := &runtimeapi.ImageSpec{Image: r.env.BusyboxImage}
	resp, err := r.env.Image.ImageStatus(r.ctx(t), &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil {
		t.Fatalf("ImageStatus(%s): %v", r.env.BusyboxImage, err)
	}
	if resp.GetImage() == nil {
		t.Logf("image %s absent: pulling it", r.env.BusyboxImage)
		pull, err := r.env.Image.PullImage(r.ctx(t), &runtimeapi.PullImageRequest{Image: spec})
		if err != nil {
			t.Fatalf("PullImage(%s): %v", r.env.BusyboxImage, err)
		}
		if pull.GetImageRef() == "" {
			t.Errorf("PullImage returned an empty image_ref")
		}
		resp, err = r.env.Image.ImageStatus(r.ctx(t), &runtimeapi.ImageStatusRequest{Image: spec})
		if err != nil {
			t.Fatalf("ImageStatus(%s) after pull: %v", r.env.BusyboxImage, err)
		}
		if resp.GetImage() == nil {
			t.Fatalf("ImageStatus(%s) after a successful pull: no image", r.env.BusyboxImage)
		}
	}
	img := resp.GetImage()
	if img.GetId() == "" {
		t.Errorf("image %s has no id", r.env.BusyboxImage)
	}
	if !slices.Contains(img.GetRepoTags(), r.env.BusyboxImage) {
		t.Errorf("image repo_tags %v do not contain %s", img.GetRepoTags(), r.env.BusyboxImage)
	}
	t.Logf("image %s id %s tags %v", r.env.BusyboxImage, img.GetId(), img.GetRepoTags())
}
