package main

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// push uploads img to a registry that speaks plain HTTP (the local registry
// critest pulls from); name.Insecure allows the http scheme.
func push(ref string, img v1.Image) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("-push %q: %w", ref, err)
	}
	if err := remote.Write(r, img); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}

// rehost names each ref in registry instead of its own: the repository path
// and tag are kept, the registry host (docker.io when none is given) is
// replaced. registry.k8s.io/e2e-test-images/agnhost:2.63.0 in
// 127.0.0.1:5000 is 127.0.0.1:5000/e2e-test-images/agnhost:2.63.0.
func rehost(refs []string, registry string) ([]string, error) {
	if registry == "" || strings.Contains(registry, "/") {
		return nil, fmt.Errorf("-push-registry %q: want HOST:PORT", registry)
	}
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		full, _, err := normalizeRef(ref)
		if err != nil {
			return nil, err
		}
		_, repoTag, _ := strings.Cut(full, "/")
		out = append(out, registry+"/"+repoTag)
	}
	return out, nil
}
