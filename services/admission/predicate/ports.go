package predicate

import (
	v1 "k8s.io/api/core/v1"
)

// bindAll is the address a host port without hostIP binds.
const bindAll = "0.0.0.0"

type protocolPort struct {
	protocol string
	port     int32
}

// hostPorts is the set of host ports in use, by host IP, as the scheduler's
// framework.HostPortInfo.
type hostPorts map[string]map[protocolPort]struct{}

// normalize applies the API defaults: no hostIP binds every address, no
// protocol is TCP.
func normalize(p v1.ContainerPort) (string, protocolPort) {
	ip, proto := p.HostIP, string(p.Protocol)
	if ip == "" {
		ip = bindAll
	}
	if proto == "" {
		proto = string(v1.ProtocolTCP)
	}
	return ip, protocolPort{protocol: proto, port: p.HostPort}
}

func (h hostPorts) add(p v1.ContainerPort) {
	ip, pp := normalize(p)
	if h[ip] == nil {
		h[ip] = map[protocolPort]struct{}{}
	}
	h[ip][pp] = struct{}{}
}

// conflicts follows HostPortInfo.CheckConflict: a port on 0.0.0.0 clashes
// with the same protocol and port on any address; a port on a specific
// address clashes only with that address and 0.0.0.0.
func (h hostPorts) conflicts(p v1.ContainerPort) bool {
	ip, pp := normalize(p)
	if ip == bindAll {
		for _, used := range h {
			if _, ok := used[pp]; ok {
				return true
			}
		}
		return false
	}
	for _, key := range [...]string{bindAll, ip} {
		if _, ok := h[key][pp]; ok {
			return true
		}
	}
	return false
}

// podHostPorts lists the host ports a pod holds while it runs: those of its
// containers and of its restartable init containers (sidecars), which run for
// the pod's whole life; plain init containers have exited by then. This is
// the scheduler's util.GetHostPorts.
func podHostPorts(pod *v1.Pod) []v1.ContainerPort {
	var ports []v1.ContainerPort
	collect := func(c *v1.Container) {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			collect(c)
		}
	}
	for i := range pod.Spec.Containers {
		collect(&pod.Spec.Containers[i])
	}
	return ports
}

// fitsHostPorts checks the pod's host ports against the active pods', as the
// scheduler's nodeports.Fits. Clashes inside the pod itself are left to API
// validation, as there.
func fitsHostPorts(pod *v1.Pod, otherPods []*ActivePodInfo) bool {
	want := podHostPorts(pod)
	if len(want) == 0 {
		return true
	}
	used := hostPorts{}
	for _, other := range otherPods {
		for _, p := range other.hostPorts {
			used.add(p)
		}
	}
	for _, p := range want {
		if used.conflicts(p) {
			return false
		}
	}
	return true
}
