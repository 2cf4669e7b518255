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
