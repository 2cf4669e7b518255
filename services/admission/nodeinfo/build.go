package nodeinfo

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/splitlet/splitlet/internal/nodelabels"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AgentLabel and AgentLabelValue mark a node run by splitlet
// (nodelabels).
const (
	AgentLabel      = nodelabels.AgentLabel
	AgentLabelValue = nodelabels.AgentLabelValue
)

// Labels returns the node's labels (nodelabels.Labels), shared with the
// Node sync registers.
func Labels(hostname string, configured map[string]string) map[string]string {
	return nodelabels.Labels(hostname, configured)
}

// Build returns the node object described by cfg, measuring what cfg does
// not set. Errors wrap errdefs.ErrInvalidArgument for bad configuration.
func Build(cfg Config) (*v1.Node, error) {
	cfg = cfg.withDefaults()
	// The kubelet's node name and hostname label are both its
	// --hostname-override; NodeName is splitlet's, so it is the hostname
	// unless one is set apart.
	hostname, err := getHostname(cmp.Or(cfg.Hostname, cfg.NodeName))
	if err != nil {
		return nil, err
	}
	name := cfg.NodeName
	if name == "" {
		name = hostname
	}
	for _, t := range cfg.Taints {
		if t.Key == "" || !slices.Contains([]v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute}, t.Effect) {
			return nil, fmt.Errorf("taint %q: want a key and effect NoSchedule, PreferNoSchedule or NoExecute: %w", t.ToString(), errdefs.ErrInvalidArgument)
		}
	}

	capacity, err := detectCapacity(cfg)
	if err != nil {
		return nil, err
	}
	maps.Copy(capacity, cfg.Capacity)
	eviction, err := hardEvictionReservation(cfg.EvictionHard, capacity)
	if err != nil {
		return nil, err
	}
	allocatable := allocatableFrom(capacity, cfg.SystemReserved, cfg.KubeReserved, eviction)
	maps.Copy(allocatable, cfg.Allocatable)

	labels := Labels(hostname, cfg.Labels)

	sgp := cfg.SupplementalGroupsPolicy
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       v1.NodeSpec{Taints: slices.Clone(cfg.Taints)},
		Status: v1.NodeStatus{
			Capacity:    capacity,
			Allocatable: allocatable,
			NodeInfo: v1.NodeSystemInfo{
				OperatingSystem: runtime.GOOS,
				Architecture:    runtime.GOARCH,
			},
			Features: &v1.NodeFeatures{SupplementalGroupsPolicy: &sgp},
		},
	}, nil
}

// getHostname canonicalizes the override or the machine's hostname, trimmed
// and lowercased, as component-helpers' node/util.GetHostname (not imported:
// that package pulls in client-go).
func getHostname(override string) (string, error) {
	name := override
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("couldn't determine hostname: %w", err)
		}
		name = h
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return "", fmt.Errorf("empty hostname is invalid: %w", errdefs.ErrInvalidArgument)
	}
	return name, nil
}

// Static serves one node object, built once; only its runtime features
// change afterwards (SetFeatures), each change a new object, so a node once
// returned is never written to.
type Static struct {
	node atomic.Pointer[v1.Node]
}

// NewStatic returns a Static serving node.
func NewStatic(node *v1.Node) *Static {
	s := &Static{}
	s.node.Store(node.DeepCopy())
	return s
}

// Node returns a copy of the node, so callers may not change what later
// callers see. Its signature is predicate.GetNodeFunc's.
func (s *Static) Node(context.Context) (*v1.Node, error) {
	return s.node.Load().DeepCopy(), nil
}

// Shared returns the node itself, for callers that only read it, as the
// kubelet's predicate admission reads the node its informer caches: it
// spares every admission a copy of the node. Its signature is
// predicate.GetNodeFunc's, whose node is only read.
func (s *Static) Shared(context.Context) (*v1.Node, error) {
	return s.node.Load(), nil
}

// SetFeatures replaces the node's status.features, as the kubelet's
// NodeFeatures status setter does with what the runtime last reported.
// The node is copied, so callers holding the previous one keep reading it
// unchanged. It reports whether the features changed.
func (s *Static) SetFeatures(f *v1.NodeFeatures) bool {
	for {
		old := s.node.Load()
		if apiequality.Semantic.DeepEqual(old.Status.Features, f) {
			return false
		}
		next := *old
		next.Status.Features = f.DeepCopy()
		if s.node.CompareAndSwap(old, &next) {
			return true
		}
	}
}
