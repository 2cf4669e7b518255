// Package policycheck refuses, at apply, a pod the node would refuse when
// starting it, naming the pod's field, so that nothing of it is started
// (issue 22: what the gateway refused used to be accepted and then retried
// forever in CreateContainerError).
//
// Two rules are checked:
//   - the gateway's policy (privileged, host namespaces, capabilities, host
//     paths), asked of the gateway itself (PolicyService.CheckPod), so sync
//     holds no copy of its rules and its configuration;
//   - sync's own directories (its state directory, the directories of its
//     own socket and the gateway's) are never a hostPath volume, nor below
//     or above one: pods.db and the runtime's socket would be a container's
//     to rewrite or call.
//
// A gateway that does not serve PolicyService (an older one, or a CRI
// runtime sync was pointed at directly) leaves the policy to creation time.
package policycheck

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/splitlet/splitlet/internal/hostpath"
	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
)

// Checker checks pods against the gateway's policy and sync's directories.
// It is safe for concurrent use.
type Checker struct {
	policy    gatewayv1.PolicyServiceClient
	protected []string // resolved
}

// New returns a Checker asking the gateway on conn, and refusing host
// paths that meet one of protectedDirs.
func New(conn grpc.ClientConnInterface, protectedDirs ...string) *Checker {
	c := &Checker{policy: gatewayv1.NewPolicyServiceClient(conn)}
	for _, d := range protectedDirs {
		if d != "" {
			c.protected = append(c.protected, hostpath.Resolve(d))
		}
	}
	return c
}

// Check returns the pod's refused fields. err is a failure to ask the
// gateway (the pod is then neither accepted nor refused by the policy).
func (c *Checker) Check(ctx context.Context, pod *v1.Pod) (field.ErrorList, error) {
	errs := c.protectedPaths(pod)
	req, containers := request(pod)
	resp, err := c.policy.CheckPod(ctx, req)
	if status.Code(err) == codes.Unimplemented {
		return errs, nil
	}
	if err != nil {
		return errs, fmt.Errorf("asking the gateway's policy: %w", err)
	}
	for _, v := range resp.GetViolations() {
		errs = append(errs, field.Forbidden(violationPath(v, containers), "the node's policy: "+v.GetRule()))
	}
	return errs, nil
}

// protectedPaths refuses hostPath volumes that meet sync's directories.
func (c *Checker) protectedPaths(pod *v1.Pod) field.ErrorList {
	var errs field.ErrorList
	for i, vol := range pod.Spec.Volumes {
		if vol.HostPath == nil {
			continue
		}
		real := hostpath.Resolve(vol.HostPath.Path)
		for _, dir := range c.protected {
			if hostpath.Within(real, dir) || hostpath.Within(dir, real) {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "volumes").Index(i).Child("hostPath", "path"),
					fmt.Sprintf("%s holds splitlet's own state or sockets, which no pod may mount", dir)))
				break
			}
		}
	}
	return errs
}

// container is one container of a request and its field path.
type container struct {
	path *field.Path
	sent *gatewayv1.ContainerSecurity
}

// request describes pod for PolicyService, with each container by its
// index in the request: init, regular, then ephemeral ones.
func request(pod *v1.Pod) (*gatewayv1.CheckPodRequest, []container) {
	spec := field.NewPath("spec")
	req := &gatewayv1.CheckPodRequest{
		Namespace: pod.Namespace, Name: pod.Name,
		HostNetwork: pod.Spec.HostNetwork, HostPid: pod.Spec.HostPID, HostIpc: pod.Spec.HostIPC,
	}
	var containers []container
	add := func(p *field.Path, name string, sc *v1.SecurityContext) {
		c := &gatewayv1.ContainerSecurity{Name: name}
		if sc != nil {
			c.Privileged = sc.Privileged != nil && *sc.Privileged
			if sc.Capabilities != nil {
				for _, capability := range sc.Capabilities.Add {
					c.AddCapabilities = append(c.AddCapabilities, string(capability))
				}
			}
		}
		req.Containers = append(req.Containers, c)
		containers = append(containers, container{path: p, sent: c})
	}
	for i, c := range pod.Spec.InitContainers {
		add(spec.Child("initContainers").Index(i), c.Name, c.SecurityContext)
	}
	for i, c := range pod.Spec.Containers {
		add(spec.Child("containers").Index(i), c.Name, c.SecurityContext)
	}
	for i, c := range pod.Spec.EphemeralContainers {
		add(spec.Child("ephemeralContainers").Index(i), c.Name, c.SecurityContext)
	}
	for i, vol := range pod.Spec.Volumes {
		if vol.HostPath != nil {
			req.HostPaths = append(req.HostPaths, &gatewayv1.HostPath{VolumeIndex: int32(i), Path: vol.HostPath.Path})
		}
	}
	return req, containers
}

// violationPath is the pod field v is about.
func violationPath(v *gatewayv1.Violation, containers []container) *field.Path {
	spec := field.NewPath("spec")
	i := int(v.GetIndex())
	switch v.GetKind() {
	case gatewayv1.Violation_KIND_HOST_NETWORK:
		return spec.Child("hostNetwork")
	case gatewayv1.Violation_KIND_HOST_PID:
		return spec.Child("hostPID")
	case gatewayv1.Violation_KIND_HOST_IPC:
		return spec.Child("hostIPC")
	case gatewayv1.Violation_KIND_HOST_PATH:
		return spec.Child("volumes").Index(i).Child("hostPath", "path")
	case gatewayv1.Violation_KIND_PRIVILEGED:
		if i < len(containers) {
			return containers[i].path.Child("securityContext", "privileged")
		}
	case gatewayv1.Violation_KIND_CAPABILITY:
		if i < len(containers) {
			add := containers[i].path.Child("securityContext", "capabilities", "add")
			if k := slices.Index(containers[i].sent.GetAddCapabilities(), v.GetValue()); k >= 0 {
				return add.Index(k)
			}
			return add
		}
	}
	return spec
}
