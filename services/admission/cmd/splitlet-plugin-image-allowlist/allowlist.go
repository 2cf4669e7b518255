package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/splitlet/splitlet/services/admission/plugin"
)

const (
	// envAllowlist names the variable holding the allowed image prefixes.
	envAllowlist = "SPLITLET_IMAGE_ALLOWLIST"
	// ReasonImageNotAllowed is the pod status reason of a rejection.
	ReasonImageNotAllowed = "ImageNotAllowed"

	version = "0.1.0"
)

// allowlist admits pods whose images all start with one of its prefixes. An
// empty list allows nothing: a plugin that was configured wrongly should be
// noticed, not silently admit everything.
type allowlist struct {
	prefixes []string
}

var (
	_ plugin.AdmissionPlugin = (*allowlist)(nil)
	_ plugin.Describer       = (*allowlist)(nil)
)

func allowlistFromEnv() *allowlist {
	return newAllowlist(os.Getenv(envAllowlist))
}

func newAllowlist(list string) *allowlist {
	a := &allowlist{}
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			a.prefixes = append(a.prefixes, p)
		}
	}
	return a
}

// Admit implements plugin.AdmissionPlugin. It never returns an error: every
// pod gets a decision.
func (a *allowlist) Admit(_ context.Context, req *plugin.Request) (*plugin.Response, error) {
	spec := &req.Pod.Spec
	// Init containers first, then regular, then ephemeral: the order the
	// kubelet starts them, so the first image reported is the first that
	// would have been pulled.
	for _, c := range spec.InitContainers {
		if r := a.check("init container", c.Name, c.Image); r != nil {
			return r, nil
		}
	}
	for _, c := range spec.Containers {
		if r := a.check("container", c.Name, c.Image); r != nil {
			return r, nil
		}
	}
	for _, c := range spec.EphemeralContainers {
		if r := a.check("ephemeral container", c.Name, c.Image); r != nil {
			return r, nil
		}
	}
	return &plugin.Response{Admit: true}, nil
}

func (a *allowlist) check(kind, name, image string) *plugin.Response {
	for _, p := range a.prefixes {
		if strings.HasPrefix(image, p) {
			return nil
		}
	}
	allowed := "none: " + envAllowlist + " is empty"
	if len(a.prefixes) > 0 {
		allowed = strings.Join(a.prefixes, ", ")
	}
	return &plugin.Response{
		Reason:  ReasonImageNotAllowed,
		Message: fmt.Sprintf("%s %q uses image %q, which matches no allowed prefix (allowed: %s)", kind, name, image, allowed),
	}
}

// Describe implements plugin.Describer.
func (a *allowlist) Describe(context.Context) (plugin.Info, error) {
	return plugin.Info{Name: "image-allowlist", Version: version}, nil
}
