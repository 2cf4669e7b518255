package nodeinfo

import (
	v1 "k8s.io/api/core/v1"
)

// DefaultMaxPods is the kubelet's default --max-pods.
const DefaultMaxPods = 110

// DefaultEvictionHard is the kubelet's default --eviction-hard on Linux.
// Only memory.available and nodefs.available reserve capacity.
var DefaultEvictionHard = map[string]string{
	"memory.available":   "100Mi",
	"nodefs.available":   "10%",
	"nodefs.inodesFree":  "5%",
	"imagefs.available":  "15%",
	"imagefs.inodesFree": "5%",
}

// Config describes the node. Zero values take the kubelet's defaults.
type Config struct {
	// Hostname is the kubernetes.io/hostname label, trimmed and
	// lowercased; empty means NodeName, else the machine's hostname.
	Hostname string
	// NodeName is the node object's name, and its hostname unless Hostname
	// is set (the kubelet's --hostname-override, which names the node and
	// is its kubernetes.io/hostname); empty means the machine's hostname.
	NodeName string
	// Labels are added to the standard labels and win over them
	// (--node-labels).
	Labels map[string]string
	// Taints are registered on the node (--register-with-taints).
	Taints []v1.Taint

	// RootDir is the directory whose filesystem pods' ephemeral storage
	// lives on (the kubelet's --root-dir); empty means "/".
	RootDir string
	// MaxPods is the pods capacity; 0 means DefaultMaxPods.
	MaxPods int64
	// Capacity replaces detected capacity per resource and adds resources
	// that cannot be detected, such as extended resources
	// ("example.com/gpu": "2").
	Capacity v1.ResourceList
	// SystemReserved and KubeReserved are subtracted from capacity
	// (--system-reserved, --kube-reserved).
	SystemReserved v1.ResourceList
	KubeReserved   v1.ResourceList
	// EvictionHard maps a signal to a threshold, "100Mi" or "10%"
	// (--eviction-hard). Nil means DefaultEvictionHard; an empty map means
	// no thresholds.
	EvictionHard map[string]string
	// Allocatable, when it names a resource, sets its allocatable outright
	// and skips the reservation arithmetic for it.
	Allocatable v1.ResourceList

	// SupplementalGroupsPolicy declares that the container runtime honours
	// supplementalGroupsPolicy Strict (node.status.features).
	SupplementalGroupsPolicy bool

	// ProcRoot and SysRoot locate /proc and /sys; for tests, or for running
	// in a container with the host's mounted elsewhere.
	ProcRoot string
	SysRoot  string
}

func (c Config) withDefaults() Config {
	if c.RootDir == "" {
		c.RootDir = "/"
	}
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.EvictionHard == nil {
		c.EvictionHard = DefaultEvictionHard
	}
	if c.ProcRoot == "" {
		c.ProcRoot = "/proc"
	}
	if c.SysRoot == "" {
		c.SysRoot = "/sys"
	}
	return c
}
