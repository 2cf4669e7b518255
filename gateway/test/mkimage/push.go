package main

import (
	"fmt"

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
