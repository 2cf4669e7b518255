package fake

import (
	"context"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
)

func TestNormalizeImageRef(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		desc, in, want string
		bad            bool
	}{
		{desc: "official image", in: "busybox", want: "docker.io/library/busybox:latest"},
		{desc: "official with tag", in: "busybox:1.36", want: "docker.io/library/busybox:1.36"},
		{desc: "user repo", in: "foo/bar", want: "docker.io/foo/bar:latest"},
		{desc: "explicit docker.io", in: "docker.io/library/busybox:latest", want: "docker.io/library/busybox:latest"},
		{desc: "index.docker.io", in: "index.docker.io/busybox", want: "docker.io/library/busybox:latest"},
		{desc: "other registry", in: "registry.k8s.io/pause:3.10", want: "registry.k8s.io/pause:3.10"},
		{desc: "registry with port", in: "localhost:5000/app", want: "localhost:5000/app:latest"},
		{desc: "digest only", in: "busybox@" + digest, want: "docker.io/library/busybox@" + digest},
		{desc: "tag and digest", in: "busybox:1@" + digest, want: "docker.io/library/busybox:1@" + digest},
		{desc: "empty", in: "", bad: true},
		{desc: "uppercase", in: "BusyBox", bad: true},
		{desc: "bad digest", in: "busybox@sha256:xyz", bad: true},
		{desc: "space", in: "busy box", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := NormalizeImageRef(tc.in)
			if tc.bad {
				if !errdefs.IsInvalidArgument(err) {
					t.Fatalf("NormalizeImageRef(%q) = %q, %v; want InvalidArgument", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("NormalizeImageRef(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestImages(t *testing.T) {
	ctx := context.Background()
	r := newTestRuntime(t, Options{Images: []string{}})
	status := func(ref string) *runtimeapi.Image {
		t.Helper()
		resp, err := r.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil {
			t.Fatalf("ImageStatus(%s): %v", ref, err)
		}
		return resp.Image
	}
	if img := status("busybox"); img != nil {
		t.Fatalf("absent image has status %v", img)
	}
	pull, err := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
	if err != nil {
		t.Fatal(err)
	}
	img := status("docker.io/library/busybox:latest")
	if img == nil || img.Id != pull.ImageRef || !strings.HasPrefix(img.Id, "sha256:") || len(img.Id) != 71 {
		t.Fatalf("status %v after pull returning %q", img, pull.ImageRef)
	}
	if len(img.RepoTags) != 1 || img.RepoTags[0] != "docker.io/library/busybox:latest" || len(img.RepoDigests) != 1 || img.Size == 0 {
		t.Fatalf("image %v", img)
	}
	if byID := status(img.Id); byID == nil || byID.Id != img.Id {
		t.Fatalf("lookup by ID: %v", byID)
	}
	again, _ := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox:latest"}})
	if again.ImageRef != pull.ImageRef {
		t.Fatalf("re-pull changed the image ID: %s vs %s", again.ImageRef, pull.ImageRef)
	}
	if _, err := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "registry.k8s.io/pause:3.10"}}); err != nil {
		t.Fatal(err)
	}

	list := func(filter string) int {
		resp, err := r.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: filter}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Images)
	}
	if n := list(""); n != 2 {
		t.Fatalf("ListImages = %d, want 2", n)
	}
	if n := list("busybox"); n != 1 {
		t.Fatalf("ListImages(busybox) = %d, want 1", n)
	}
	for i := 0; i < 2; i++ { // idempotent
		if _, err := r.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}}); err != nil {
			t.Fatal(err)
		}
	}
	if img := status("busybox"); img != nil || list("") != 1 {
		t.Fatalf("busybox still present after remove: %v", img)
	}
	fs, err := r.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(fs.ImageFilesystems) != 1 || fs.ImageFilesystems[0].UsedBytes.GetValue() == 0 {
		t.Fatalf("ImageFsInfo = %v, %v", fs, err)
	}
}

func TestPullFailures(t *testing.T) {
	ctx := context.Background()
	r := newTestRuntime(t, Options{})
	if _, err := r.SetFaults(ctx, &gatewayv1.SetFaultsRequest{PullFailures: []string{`nosuch`, `:broken$`}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc, ref string
		fail      bool
	}{
		{desc: "matching name", ref: "nosuch/app", fail: true},
		{desc: "matches the normalised ref", ref: "app:broken", fail: true},
		{desc: "other image", ref: "nginx:1.27"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := r.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: tc.ref}})
			if !tc.fail {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errdefs.IsNotFound(err) || !strings.Contains(err.Error(), "failed to pull and unpack image") || !strings.HasSuffix(err.Error(), ": not found") {
				t.Fatalf("PullImage(%s) err = %v, want a registry NotFound", tc.ref, err)
			}
			resp, _ := r.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: tc.ref}})
			if resp.GetImage() != nil {
				t.Fatal("failed pull left an image behind")
			}
		})
	}
}
