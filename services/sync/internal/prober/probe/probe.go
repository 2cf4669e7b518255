package probe

import (
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Result is the outcome of one probe attempt, the kubelet's pkg/probe
// Result; its value is the kubelet's spelling, which appears in events.
type Result string

// The results of one attempt.
const (
	Success Result = "success"
	// Warning is a success worth an event (an HTTP redirect the prober
	// did not follow).
	Warning Result = "warning"
	Failure Result = "failure"
	Unknown Result = "unknown"
)

// KubeVersion is the Kubernetes minor version splitlet's behaviour tracks
// (k8s.io/api v0.37), used in the probe User-Agent "kube-probe/1.37".
const KubeVersion = "1.37"

// UserAgent is the kubelet's probe User-Agent for a purpose ("probe" or
// "lifecycle"), e.g. "kube-probe/1.37" (pkg/probe/http userAgent).
func UserAgent(purpose string) string {
	return fmt.Sprintf("kube-%s/%s", purpose, KubeVersion)
}

// ResolveContainerPort turns a probe's port (a number, or the name of one
// of the container's ports) into a port number. Matches the kubelet's
// probe.ResolveContainerPort: a string that names no port is tried as a
// number, and the result must be 1-65535.
func ResolveContainerPort(param intstr.IntOrString, c *v1.Container) (int, error) {
	port := -1
	var err error
	switch param.Type {
	case intstr.Int:
		port = param.IntValue()
	case intstr.String:
		if port, err = findPortByName(c, param.StrVal); err != nil {
			// Last ditch effort - maybe it was an int stored as string?
			if port, err = strconv.Atoi(param.StrVal); err != nil {
				return port, err
			}
		}
	default:
		return port, fmt.Errorf("intOrString had no kind: %+v", param)
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return port, fmt.Errorf("invalid port number: %v", port)
}

func findPortByName(c *v1.Container, portName string) (int, error) {
	for _, p := range c.Ports {
		if p.Name == portName {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("port %s not found", portName)
}

// Dialer returns a dialer whose connections are closed with a reset
// rather than lingering in TIME_WAIT, as the kubelet's probe.ProbeDialer
// does: a node probing hundreds of containers every few seconds would
// otherwise run out of ephemeral ports.
func Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{
		Timeout: timeout,
		Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) {
				_ = syscall.SetsockoptLinger(int(fd), syscall.SOL_SOCKET, syscall.SO_LINGER, &syscall.Linger{Onoff: 1, Linger: 1})
			})
		},
	}
}
