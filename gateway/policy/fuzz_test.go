package policy

import (
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// FuzzCheck: the gateway's policy never panics on any CreateContainer or
// RunPodSandbox request the wire can carry (nil configs, missing security
// contexts, odd mounts), under the default and a permissive configuration.
func FuzzCheck(f *testing.F) {
	seeds := []proto.Message{
		&runtimeapi.CreateContainerRequest{Config: &runtimeapi.ContainerConfig{
			Mounts: []*runtimeapi.Mount{{HostPath: "/a/../.."}},
			Linux:  &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{Privileged: true}}}},
		&runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_NODE}}}}},
	}
	for i, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, i == 0)
	}
	strict := New(DefaultConfig())
	open := DefaultConfig()
	open.AllowPrivileged, open.AllowHostPID, open.AllowHostIPC, open.AllowedHostPathPrefixes = true, true, true, []string{"/"}
	permissive := New(open)
	f.Fuzz(func(t *testing.T, data []byte, create bool) {
		var req proto.Message = &runtimeapi.RunPodSandboxRequest{}
		if create {
			req = &runtimeapi.CreateContainerRequest{}
		}
		if proto.Unmarshal(data, req) != nil {
			return
		}
		_ = strict.Check(req)
		_ = permissive.Check(req)
	})
}
