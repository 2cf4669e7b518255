// Package admitter is the glue of splitlet-admission: it holds the node
// object, builds the kubelet's admit handler chain (eviction admission,
// predicate admission with critical-pod preemption, then the plugin chain)
// and answers one pod's admission against the pods already active.
//
//	a, err := admitter.New(admitter.Options{Node: node, Eviction: mgr, Plugins: chain})
//	res := a.Admit(ctx, pod, activePods)
//	if !res.Admit && len(res.Victims) > 0 {
//		// the caller stops the victims with preemption.VictimReason and
//		// VictimMessage, then asks again without them
//	}
//
// It knows nothing of the wire: the server decodes requests and encodes
// results.
package admitter

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/services/admission/eviction"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
	"github.com/splitlet/splitlet/services/admission/nodeinfo"
	"github.com/splitlet/splitlet/services/admission/predicate"
	"github.com/splitlet/splitlet/services/admission/preemption"
)

// EvictionManager is what admission needs of the eviction manager: the
// pressure in force for eviction admission and the node conditions for
// GetNode. *eviction.Manager implements it.
type EvictionManager interface {
	eviction.PressureSource
	// Conditions returns the MemoryPressure, DiskPressure and PIDPressure
	// node conditions.
	Conditions() []v1.NodeCondition
}

var _ EvictionManager = (*eviction.Manager)(nil)

// Options configure an Admitter.
type Options struct {
	// Node is the node pods are admitted against; required. It is copied.
	Node *v1.Node
	// Eviction, when set, supplies pressure and node conditions. Nil means
	// no eviction manager: the node is never under pressure.
	Eviction EvictionManager
	// Plugins runs after the built-in handlers (the plugin chain); nil
	// means none.
	Plugins lifecycle.PodAdmitHandler
	// ActivePodInfos, when set, supplies the predicate handler with
	// summaries of active pods computed once per pod (a *podcache.Cache);
	// nil computes them on every admission.
	ActivePodInfos predicate.ActivePodInfoSource
	// OS is the node's OS as runtime.GOOS spells it; empty means
	// runtime.GOOS. Tests set it.
	OS string
	// Now is the clock for condition heartbeats; nil means time.Now.
	Now func() time.Time
}

// Admitter answers admission for one node. It is safe for concurrent use.
type Admitter struct {
	chain    lifecycle.Chain
	node     *nodeinfo.Static
	eviction EvictionManager
	now      func() time.Time

	mu sync.Mutex
	// active and admitted are the latest Admit call's active pods (the
	// caller's slice, which Admit's contract keeps unchanged) and the
	// pod it admitted, if any: ActivePods copies them when asked, rarely,
	// rather than every admission copying a node's worth of pointers.
	active   []*v1.Pod
	admitted *v1.Pod
}

// New builds the handler chain in the kubelet's order. NewMainKubelet
// (pkg/kubelet/kubelet.go) adds the eviction manager's admit handler first,
// then sysctls and the resource allocation handler, then the predicate
// handler with the CriticalPodAdmissionHandler, then AppArmor and the
// shutdown manager. The sysctl allowlist is splitlet-sync's (every pod
// passes it there, with or without admission); splitlet has no device or
// AppArmor handlers of its own (the runtime gateway's policy covers what it
// enforces), so the configured plugins take the place of the handlers
// after the predicate.
//
// It returns an error wrapping errdefs.ErrInvalidArgument when opts.Node is
// nil.
func New(opts Options) (*Admitter, error) {
	if opts.Node == nil {
		return nil, fmt.Errorf("admitter: no node: %w", errdefs.ErrInvalidArgument)
	}
	a := &Admitter{
		node:     nodeinfo.NewStatic(opts.Node),
		eviction: opts.Eviction,
		now:      opts.Now,
	}
	if a.now == nil {
		a.now = time.Now
	}
	var pressure eviction.PressureSource = &eviction.StaticPressure{}
	if opts.Eviction != nil {
		pressure = opts.Eviction
	}
	a.chain = lifecycle.Chain{
		eviction.NewAdmitHandler(pressure),
		predicate.NewHandler(predicate.Options{
			GetNode:        a.node.Shared,
			FailureHandler: &preemption.CriticalPodAdmissionHandler{},
			OS:             opts.OS,
			ActivePodInfos: opts.ActivePodInfos,
		}),
	}
	if opts.Plugins != nil {
		a.chain = append(a.chain, opts.Plugins)
	}
	return a, nil
}

// Admit decides whether pod may run beside active, which must not include
// pod itself and must not change afterwards (it is kept for ActivePods;
// appending to it is fine). A rejection with Victims means: stop the victims
// (preemption.VictimReason, preemption.VictimMessage), then ask again.
//
// Before victims are handed out, the chain is run once more as if they were
// already gone. The kubelet stops victims inside the predicate handler and
// only then runs the handlers after it, so a later handler (here: a plugin)
// that rejects the pod anyway would have cost the victims their lives for
// nothing; splitlet returns that later rejection instead, with no victims.
func (a *Admitter) Admit(ctx context.Context, pod *v1.Pod, active []*v1.Pod) lifecycle.PodAdmitResult {
	res := a.chain.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: pod, OtherPods: active})
	if !res.Admit && len(res.Victims) > 0 {
		remaining := slices.DeleteFunc(slices.Clone(active), func(p *v1.Pod) bool {
			return slices.Contains(res.Victims, p)
		})
		again := a.chain.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: pod, OtherPods: remaining})
		if !again.Admit && len(again.Victims) == 0 {
			res = again
		}
	}
	a.recordActive(pod, active, res.Admit)
	return res
}

// recordActive remembers the pods sync last said were active, plus the pod
// just admitted, for the eviction manager to rank.
func (a *Admitter) recordActive(pod *v1.Pod, active []*v1.Pod, admitted bool) {
	if !admitted {
		pod = nil
	}
	a.mu.Lock()
	a.active, a.admitted = active, pod
	a.mu.Unlock()
}

// ActivePods returns the active pods of the latest Admit call, with the pod
// it admitted: the eviction manager's ActivePodsFunc. Admission learns of
// pods only through Admit, so a pod that ended since then is still listed
// until the next call.
func (a *Admitter) ActivePods() []*v1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	pods := make([]*v1.Pod, len(a.active), len(a.active)+1)
	copy(pods, a.active)
	if a.admitted != nil {
		pods = append(pods, a.admitted)
	}
	return pods
}

// Node returns the node object with its pressure conditions: the eviction
// manager's when there is one, otherwise all False (no manager, no
// pressure). The result is the caller's to change.
func (a *Admitter) Node(ctx context.Context) (*v1.Node, error) {
	node, err := a.node.Node(ctx)
	if err != nil {
		return nil, err
	}
	node.Status.Conditions = mergeConditions(node.Status.Conditions, a.conditions())
	return node, nil
}

// NodeView is Node for callers that only read the node, such as the
// plugins' encoder on every admission: the result shares everything with
// the node admission keeps but its list of conditions, which spares a
// deep copy of the node per call. It must not be changed.
func (a *Admitter) NodeView(ctx context.Context) (*v1.Node, error) {
	shared, err := a.node.Shared(ctx)
	if err != nil {
		return nil, err
	}
	node := *shared
	node.Status.Conditions = mergeConditions(shared.Status.Conditions, a.conditions())
	return &node, nil
}

// SetNodeFeatures sets the node's status.features (what the runtime
// reports it supports, such as supplementalGroupsPolicy Strict), which the
// predicate handler admits against from the next admission on. It reports
// whether they changed.
func (a *Admitter) SetNodeFeatures(f *v1.NodeFeatures) bool {
	return a.node.SetFeatures(f)
}

// conditions are the node's pressure conditions (see Node).
func (a *Admitter) conditions() []v1.NodeCondition {
	if a.eviction != nil {
		return a.eviction.Conditions()
	}
	return noPressureConditions(metav1.NewTime(a.now()))
}

// noPressureConditions are the False pressure conditions with the reasons
// and messages of the kubelet's nodestatus setters (MemoryPressureCondition,
// DiskPressureCondition, PIDPressureCondition).
func noPressureConditions(now metav1.Time) []v1.NodeCondition {
	c := func(t v1.NodeConditionType, reason, msg string) v1.NodeCondition {
		return v1.NodeCondition{Type: t, Status: v1.ConditionFalse, Reason: reason, Message: msg,
			LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []v1.NodeCondition{
		c(v1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		c(v1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		c(v1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
	}
}

// mergeConditions replaces conditions of the same type and appends the rest.
func mergeConditions(base, update []v1.NodeCondition) []v1.NodeCondition {
	out := slices.Clone(base)
	for _, u := range update {
		i := slices.IndexFunc(out, func(c v1.NodeCondition) bool { return c.Type == u.Type })
		if i >= 0 {
			out[i] = u
		} else {
			out = append(out, u)
		}
	}
	return out
}
