package main

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// imageSpec says what goes into an image.
type imageSpec struct {
	Refs       []string   // names written into the layout's index
	Busybox    string     // static busybox installed at /bin/busybox, "" for none
	Files      []fileCopy // extra files
	Entrypoint []string
	Cmd        []string
	Env        []string // KEY=VALUE
	User       string   // the config's User ("1234", "user:group"), "" for root
	Dirs       []string // extra empty directories (mode 0755), absolute
	Symlinks   []link   // extra symlinks
}

// link is one -symlink PATH:TARGET.
type link struct {
	Path   string // absolute path in the image
	Target string // as written into the link
}

// epoch is the fixed creation time of every image and file, so building the
// same inputs twice gives the same digests and re-importing is a no-op.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// defaultPath is the PATH a container gets unless -env sets one; the same
// list Docker and containerd use when an image has none.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// buildImage makes a single-layer OCI image for this machine's architecture.
func buildImage(spec imageSpec) (v1.Image, error) {
	rootfs, err := buildRootfs(spec)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(rootfs)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("make layer: %w", err)
	}

	// OCI media types throughout: containerd and registries accept them, and
	// an OCI layout should not carry Docker schema 2 manifests.
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "splitlet mkimage"},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}

	base, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg := base.DeepCopy()
	cfg.Created = v1.Time{Time: epoch}
	cfg.OS = "linux"
	cfg.Architecture = runtime.GOARCH
	cfg.Config.Entrypoint = spec.Entrypoint
	cfg.Config.Cmd = spec.Cmd
	cfg.Config.Env = imageEnv(spec.Env)
	cfg.Config.User = spec.User
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	return img, nil
}

// imageEnv puts the default PATH in front of the given variables unless one
// of them sets PATH itself.
func imageEnv(env []string) []string {
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		return slices.Clone(env)
	}
	return append([]string{defaultPath}, env...)
}

// platform is the platform recorded for the image in the layout's index, so
// containerd unpacks it for this machine.
func platform() v1.Platform {
	return v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
}
