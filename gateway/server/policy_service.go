package server

import (
	"context"

	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"

	"github.com/splitlet/splitlet/gateway/policy"
)

// policyService answers PolicyService.CheckPod with the rules the gateway
// applies to RunPodSandbox and CreateContainer (policy.Violations), so sync
// can refuse a pod at apply with the same verdict.
type policyService struct {
	gatewayv1.UnimplementedPolicyServiceServer
	policy *policy.Policy
}

var violationKinds = map[policy.Kind]gatewayv1.Violation_Kind{
	policy.KindPrivileged:  gatewayv1.Violation_KIND_PRIVILEGED,
	policy.KindHostNetwork: gatewayv1.Violation_KIND_HOST_NETWORK,
	policy.KindHostPID:     gatewayv1.Violation_KIND_HOST_PID,
	policy.KindHostIPC:     gatewayv1.Violation_KIND_HOST_IPC,
	policy.KindHostPath:    gatewayv1.Violation_KIND_HOST_PATH,
	policy.KindCapability:  gatewayv1.Violation_KIND_CAPABILITY,
}

func (s policyService) CheckPod(_ context.Context, req *gatewayv1.CheckPodRequest) (*gatewayv1.CheckPodResponse, error) {
	pod := policy.Pod{HostNetwork: req.GetHostNetwork(), HostPID: req.GetHostPid(), HostIPC: req.GetHostIpc()}
	for _, c := range req.GetContainers() {
		pod.Containers = append(pod.Containers, policy.Container{Privileged: c.GetPrivileged(), AddCapabilities: c.GetAddCapabilities()})
	}
	for _, hp := range req.GetHostPaths() {
		pod.HostPaths = append(pod.HostPaths, policy.HostPath{Index: int(hp.GetVolumeIndex()), Path: hp.GetPath()})
	}
	resp := &gatewayv1.CheckPodResponse{}
	for _, v := range s.policy.Violations(pod) {
		resp.Violations = append(resp.Violations, &gatewayv1.Violation{
			Kind: violationKinds[v.Kind], Rule: v.Rule, Index: int32(v.Index), Value: v.Value,
		})
	}
	return resp, nil
}
