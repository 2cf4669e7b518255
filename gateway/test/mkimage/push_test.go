package main

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPushToPlainHTTPRegistry pushes to an in-process registry served over
// plain HTTP, as critest's local registry is, and pulls the image back.
func TestPushToPlainHTTPRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := host + "/splitlet/busybox:1.36"

	bb := fakeBusybox(t, "busybox", "sh")
	if err := run([]string{"-busybox", bb, "-cmd", "sh", "-push", ref}); err != nil {
		t.Fatalf("run -push: %v", err)
	}

	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pull %s back: %v", ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Cmd, []string{"sh"}) {
		t.Errorf("pulled image cmd = %q, want [sh]", cfg.Config.Cmd)
	}
	if layers, err := img.Layers(); err != nil || len(layers) != 1 {
		t.Errorf("pulled image layers = %d, %v; want 1", len(layers), err)
	}
}

func TestRehost(t *testing.T) {
	got, err := rehost([]string{"registry.k8s.io/e2e-test-images/agnhost:2.63.0", "registry.k8s.io/pause:3.10.2", "busybox"}, "127.0.0.1:5000")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:5000/e2e-test-images/agnhost:2.63.0", "127.0.0.1:5000/pause:3.10.2", "127.0.0.1:5000/library/busybox:latest"}
	if !slices.Equal(got, want) {
		t.Errorf("rehost = %q, want %q", got, want)
	}
	for _, bad := range []string{"", "127.0.0.1:5000/x"} {
		if _, err := rehost([]string{"busybox"}, bad); err == nil {
			t.Errorf("rehost(%q) succeeded, want an error naming -push-registry", bad)
		}
	}
}

// TestPushRegistryRehostsEveryRef pushes one image under two refs to a
// registry given by host only, and pulls both names back from it.
func TestPushRegistryRehostsEveryRef(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	bb := fakeBusybox(t, "busybox", "sh")
	if err := run([]string{"-busybox", bb, "-cmd", "sh", "-ref", "registry.k8s.io/e2e-test-images/busybox:1.37.0-1", "-ref", "registry.k8s.io/pause:3.10.2", "-push-registry", host}); err != nil {
		t.Fatalf("run -push-registry: %v", err)
	}
	for _, ref := range []string{host + "/e2e-test-images/busybox:1.37.0-1", host + "/pause:3.10.2"} {
		r, err := name.ParseReference(ref, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := remote.Image(r); err != nil {
			t.Errorf("pull %s back: %v", ref, err)
		}
	}
}
