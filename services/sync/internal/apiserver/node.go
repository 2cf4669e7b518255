package apiserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	nodeutil "k8s.io/component-helpers/node/util"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/nodelabels"
	"github.com/splitlet/splitlet/services/sync/internal/nodefeatures"
	"github.com/splitlet/splitlet/services/sync/internal/runtimestate"
)

// Taint keeps pods that do not tolerate it off splitlet's nodes: only pods
// that ask for splitlet land there. It is the default of sync's
// --register-with-taints.
var Taint = v1.Taint{Key: nodelabels.AgentLabel, Value: nodelabels.AgentLabelValue, Effect: v1.TaintEffectNoSchedule}

// LeaseNamespace holds the node leases, as for kubelets.
const LeaseNamespace = "kube-node-lease"

// NodeReport is what the node agent's other parts know about the node.
type NodeReport struct {
	Capacity    v1.ResourceList
	Allocatable v1.ResourceList
	// Conditions other than Ready: admission's MemoryPressure,
	// DiskPressure and PIDPressure.
	Conditions []v1.NodeCondition
}

// ReportFunc reports the node's resources and pressure conditions (from
// admission's GetNode, or from the machine).
type ReportFunc func(ctx context.Context) (NodeReport, error)

// RuntimeClient is the part of the CRI runtime service the node status
// needs: the runtime's conditions and the pod CIDR hand-over. The gateway's
// CRI client is one.
type RuntimeClient interface {
	Version(ctx context.Context, in *runtimeapi.VersionRequest, opts ...grpc.CallOption) (*runtimeapi.VersionResponse, error)
	Status(ctx context.Context, in *runtimeapi.StatusRequest, opts ...grpc.CallOption) (*runtimeapi.StatusResponse, error)
	UpdateRuntimeConfig(ctx context.Context, in *runtimeapi.UpdateRuntimeConfigRequest, opts ...grpc.CallOption) (*runtimeapi.UpdateRuntimeConfigResponse, error)
}

// ImageLister lists the runtime's images (the gateway's CRI image
// client), for the Node's status.images.
type ImageLister interface {
	ListImages(ctx context.Context, in *runtimeapi.ListImagesRequest, opts ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error)
}

// NodeOptions configure a NodeRegistrar.
type NodeOptions struct {
	// Name of the Node; splitlet's --node-name.
	Name string
	// Labels added to the defaults (nodelabels.Labels: kubernetes.io/hostname,
	// os, arch, splitlet.dev/agent), which they win over.
	Labels map[string]string
	// Report gives capacity, allocatable and pressure conditions; nil
	// reports none.
	Report ReportFunc
	// Taints are added to the Node when it is registered, and when a
	// restarted sync finds it lacking them (the kubelet's
	// --register-with-taints); nil adds none.
	Taints []v1.Taint
	// LeaseInterval is the Lease renewal period [10 s, the kubelet's].
	LeaseInterval time.Duration
	// StatusInterval is how often the node status is computed and, when
	// it changed, patched [10 s, the kubelet's nodeStatusUpdateFrequency].
	StatusInterval time.Duration
	// ReportInterval is how often an unchanged status is patched anyway
	// [5 min, the kubelet's nodeStatusReportFrequency]; the Lease is the
	// heartbeat in between.
	ReportInterval time.Duration
	// Addresses are the node's status.addresses (NodeAddresses), through
	// which the API server reaches the node API.
	Addresses []v1.NodeAddress
	// KubeletPort is the node API's port, reported as
	// status.daemonEndpoints.kubeletEndpoint.Port: where the API server
	// sends logs requests. 0: no node API.
	KubeletPort int32
	// Runtime, when set, is asked for its RuntimeReady and NetworkReady
	// conditions, which the Ready condition reflects, and is given the
	// Node's spec.podCIDRs (UpdateRuntimeConfig), as the kubelet does.
	// nil: Ready says nothing of the runtime.
	Runtime RuntimeClient
	// Images, when set, fills status.images.
	Images ImageLister
	// SystemInfo is the machine's part of status.nodeInfo (kernel, OS
	// image, machine, system and boot IDs: MachineInfo); the registrar adds
	// the runtime's version, the OS and architecture.
	SystemInfo v1.NodeSystemInfo
	// Events, when set, records the kubelet's node status events
	// (NodeHasSufficientMemory, NodeReady, Rebooted, ...) as the node's
	// conditions and boot ID change.
	Events NodeEventRecorder
	// Now is the clock (tests).
	Now func() time.Time
}

// runtimeSyncThreshold is how long the runtime may fail its status calls
// before the node is reported NotReady: the kubelet's
// maxWaitForContainerRuntime (30 s), so a gateway restart does not flap
// the node.
const runtimeSyncThreshold = 30 * time.Second

// nodeReadyGracePeriod bounds the fast status updates after registration:
// the kubelet's nodeReadyGracePeriod.
const nodeReadyGracePeriod = 2 * time.Minute

// NodeAddresses are the addresses a node reports: an InternalIP per node
// IP, then its hostname, when known. Matches the kubelet's NodeAddress
// setter with --node-ip given (the hostname is the machine's, as the
// kubelet's without --hostname-override, not the Node's name, which for
// splitlet need not resolve).
func NodeAddresses(nodeIPs []string, hostname string) []v1.NodeAddress {
	var addrs []v1.NodeAddress
	for _, ip := range nodeIPs {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	if hostname != "" {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: hostname})
	}
	return addrs
}

// NodeRegistrar registers a Node and keeps it alive.
type NodeRegistrar struct {
	client kubernetes.Interface
	opts   NodeOptions

	mu sync.Mutex
	// podCIDR is the last pod CIDR the runtime took (the kubelet's
	// runtimeState.podCIDR); "" until the first hand-over, so a
	// restarted sync hands it over again.
	podCIDR string
	// lastRuntimeOK is when the runtime last answered Status, and
	// lastRuntimeStatus that answer.
	lastRuntimeOK     time.Time
	lastRuntimeStatus *runtimeapi.StatusResponse

	// statusMu serializes status syncs (the kubelet's syncNodeStatusMux)
	// and guards lastReport, when the status was last patched, and
	// reportDelay, which spreads the next unchanged report (the kubelet's
	// lastStatusReportTime and delayAfterNodeStatusChange).
	statusMu    sync.Mutex
	lastReport  time.Time
	reportDelay time.Duration
	// rebooted records the Rebooted event once, as the kubelet's
	// MachineInfo setter does.
	rebooted sync.Once
}

// NewNodeRegistrar returns a registrar for opts.Name.
func NewNodeRegistrar(client kubernetes.Interface, opts NodeOptions) *NodeRegistrar {
	if opts.LeaseInterval <= 0 {
		opts.LeaseInterval = 10 * time.Second
	}
	if opts.StatusInterval <= 0 {
		opts.StatusInterval = 10 * time.Second
	}
	if opts.ReportInterval <= 0 {
		opts.ReportInterval = 5 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &NodeRegistrar{client: client, opts: opts}
}

// Run registers the node, retrying until it succeeds, then renews the
// lease and the node status until ctx ends.
func (r *NodeRegistrar) Run(ctx context.Context) {
	log := logctx.From(ctx).With(zap.String("node", r.opts.Name))
	// The kubelet's registerWithAPIServer step: 100 ms, doubling up to 7 s.
	step := 100 * time.Millisecond
	for {
		err := r.Register(ctx)
		if err == nil {
			break
		}
		log.Info("node registration failed; retrying", zap.Error(err), zap.Duration("after", step))
		select {
		case <-ctx.Done():
			return
		case <-time.After(step):
		}
		step = min(2*step, 7*time.Second)
	}
	log.Info("node registered")
	if r.opts.Runtime != nil {
		// Beside the lease and status loop, as the kubelet's
		// fastStatusUpdateOnce: the Lease must not wait for the network.
		go r.fastStatusUpdate(ctx)
	}
	lease := time.NewTicker(r.opts.LeaseInterval)
	defer lease.Stop()
	st := time.NewTicker(r.opts.StatusInterval)
	defer st.Stop()
	if err := r.RenewLease(ctx); err != nil {
		log.Info("lease renewal failed", zap.Error(err))
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-lease.C:
			if err := r.RenewLease(ctx); err != nil {
				log.Info("lease renewal failed", zap.Error(err))
			}
		case <-st.C:
			if err := r.syncStatus(ctx, false); err != nil {
				log.Info("node status update failed", zap.Error(err))
			}
		}
	}
}

// node builds the desired Node. Matches the kubelet's initialNode, taints
// from --register-with-taints included. Its name is its
// kubernetes.io/hostname, as the kubelet's --hostname-override is both;
// the labels are admission's (nodelabels.Labels), so admission judges pods
// against the labels the scheduler saw.
func (r *NodeRegistrar) node(ctx context.Context) (*v1.Node, error) {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: r.opts.Name, Labels: nodelabels.Labels(r.opts.Name, r.opts.Labels)},
		Spec:       v1.NodeSpec{Taints: slices.Clone(r.opts.Taints)},
	}
	if err := r.fillStatus(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

// fillStatus sets the node's resources, conditions and info.
func (r *NodeRegistrar) fillStatus(ctx context.Context, n *v1.Node) error {
	var report NodeReport
	if r.opts.Report != nil {
		var err error
		report, err = r.opts.Report(ctx)
		if err != nil {
			// Admission being away must not make the node look dead: the
			// heartbeat goes on with the last known resources and
			// conditions, which stay as the API server has them.
			logctx.From(ctx).Info("node report unavailable; keeping the last one", zap.Error(err))
			report = NodeReport{}
		} else {
			n.Status.Capacity, n.Status.Allocatable = report.Capacity, report.Allocatable
		}
	}
	now := metav1.NewTime(r.opts.Now())
	ready := v1.NodeCondition{
		Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "SplitletReady",
		Message: "splitlet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
	}
	if err := r.runtimeErrors(ctx); err != nil {
		ready.Status, ready.Reason, ready.Message = v1.ConditionFalse, "KubeletNotReady", err.Error()
	}
	r.setRuntimeFeatures(n)
	// Keep the transition time while Ready keeps its status.
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady && c.Status == ready.Status && !c.LastTransitionTime.IsZero() {
			ready.LastTransitionTime = c.LastTransitionTime
		}
	}
	conditions := []v1.NodeCondition{ready}
	reported := map[v1.NodeConditionType]bool{v1.NodeReady: true}
	for _, c := range report.Conditions {
		if reported[c.Type] {
			continue
		}
		reported[c.Type] = true
		c.LastHeartbeatTime = now
		if c.LastTransitionTime.IsZero() {
			// Unchanged since the last report: its transition stands.
			c.LastTransitionTime = now
			if prev := findCondition(n.Status.Conditions, c.Type); prev != nil && prev.Status == c.Status {
				c.LastTransitionTime = prev.LastTransitionTime
			}
		}
		conditions = append(conditions, c)
	}
	// Conditions nobody reports now (another agent's, or admission being
	// away) are kept as they were.
	for _, c := range n.Status.Conditions {
		if !reported[c.Type] {
			conditions = append(conditions, c)
		}
	}
	r.recordStatusEvents(n, conditions)
	n.Status.Conditions = conditions
	n.Status.Addresses = r.opts.Addresses
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = r.opts.KubeletPort
	info := r.opts.SystemInfo
	info.OperatingSystem, info.Architecture = runtime.GOOS, runtime.GOARCH
	info.KubeletVersion = "splitlet"
	info.ContainerRuntimeVersion = r.runtimeVersion(ctx)
	n.Status.NodeInfo = info
	// The kubelet's setNodeStatus sets them on every update.
	n.Status.DeclaredFeatures = nodefeatures.Declared()
	if r.opts.Images != nil {
		images, err := r.images(ctx)
		if err != nil {
			// The kubelet's Images setter: the list is emptied.
			logctx.From(ctx).Info("error getting image list", zap.Error(err))
		}
		n.Status.Images = images
	}
	return nil
}

// recordStatusEvents records the events of the kubelet's status setters
// for a node whose status goes from n's to conditions and SystemInfo's
// boot ID: a pressure condition set or changed, Ready changed, and, once,
// a boot ID other than the one the node had (the machine rebooted).
func (r *NodeRegistrar) recordStatusEvents(n *v1.Node, conditions []v1.NodeCondition) {
	if r.opts.Events == nil {
		return
	}
	for _, ev := range conditionEvents(n.Status.Conditions, conditions) {
		r.opts.Events.Event(v1.EventTypeNormal, ev, nodeStatusEvent(r.opts.Name, ev))
	}
	if boot := r.opts.SystemInfo.BootID; n.Status.NodeInfo.BootID != "" && boot != "" && n.Status.NodeInfo.BootID != boot {
		r.rebooted.Do(func() {
			r.opts.Events.Event(v1.EventTypeWarning, NodeRebooted, fmt.Sprintf("Node %s has been rebooted, boot id: %s", r.opts.Name, boot))
		})
	}
}

// runtimeVersion is "<runtime name>://<version>" from CRI Version, or
// "<name>://Unknown" when it does not answer. Matches the kubelet's
// VersionInfo setter; with no runtime it is empty.
func (r *NodeRegistrar) runtimeVersion(ctx context.Context) string {
	if r.opts.Runtime == nil {
		return ""
	}
	v, err := r.opts.Runtime.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "remote://Unknown"
	}
	return v.GetRuntimeName() + "://" + parseRuntimeVersion(v.GetRuntimeVersion())
}

// parseRuntimeVersion is the version as the kubelet prints it: parsed as
// semantic, else generic (newRuntimeVersion in its kuberuntime manager),
// then formatted, so containerd 2.x's "v2.4.2" reads "2.4.2" and Debian's
// "1.6.20~ds1" reads "1.6.20"; "Unknown" when it does not parse.
func parseRuntimeVersion(raw string) string {
	if v, err := utilversion.ParseSemantic(raw); err == nil {
		return v.String()
	}
	if v, err := utilversion.ParseGeneric(raw); err == nil {
		return v.String()
	}
	return "Unknown"
}

// Limits of status.images: the kubelet's --node-status-max-images default
// and MaxNamesPerImageInNodeStatus.
const (
	nodeStatusMaxImages          = 50
	maxNamesPerImageInNodeStatus = 5
)

// images is the Node's status.images: the runtime's images, largest
// first, at most nodeStatusMaxImages, each named by its digests then its
// tags (at most maxNamesPerImageInNodeStatus). Matches the kubelet's
// Images setter over imageManager.GetImageList (sorted by size).
func (r *NodeRegistrar) images(ctx context.Context) ([]v1.ContainerImage, error) {
	resp, err := r.opts.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, err
	}
	list := slices.Clone(resp.GetImages())
	slices.SortStableFunc(list, func(a, b *runtimeapi.Image) int {
		if a.GetSize() != b.GetSize() {
			return cmp.Compare(b.GetSize(), a.GetSize())
		}
		return strings.Compare(a.GetId(), b.GetId())
	})
	if len(list) > nodeStatusMaxImages {
		list = list[:nodeStatusMaxImages]
	}
	var out []v1.ContainerImage
	for _, img := range list {
		names := append(slices.Clone(img.GetRepoDigests()), img.GetRepoTags()...)
		if len(names) > maxNamesPerImageInNodeStatus {
			names = names[:maxNamesPerImageInNodeStatus]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.GetSize())})
	}
	return out, nil
}

// Register creates the Node, or adopts an existing one: its labels and
// taint are made to match and its status is refreshed. Matches the
// kubelet's tryRegisterWithAPIServer (create, and on AlreadyExists
// reconcile the existing node).
func (r *NodeRegistrar) Register(ctx context.Context) error {
	want, err := r.node(ctx)
	if err != nil {
		return err
	}
	nodes := r.client.CoreV1().Nodes()
	_, err = nodes.Create(ctx, want, metav1.CreateOptions{})
	switch {
	case err == nil:
		// Create ignores status; patch it, retried on conflict: the node
		// controllers (pod CIDR, taints) write the new Node at once, and
		// an update of the created object's version lost that race and
		// failed the registration.
		return r.UpdateStatus(ctx)
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("create node %s: %w", r.opts.Name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, r.opts.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		next := cur.DeepCopy()
		if next.Labels == nil {
			next.Labels = map[string]string{}
		}
		maps.Copy(next.Labels, want.Labels)
		for _, t := range r.opts.Taints {
			if !hasTaint(next.Spec.Taints, t) {
				next.Spec.Taints = append(next.Spec.Taints, t)
			}
		}
		_, err = nodes.Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update node %s: %w", r.opts.Name, err)
	}
	return r.UpdateStatus(ctx)
}

func hasTaint(taints []v1.Taint, t v1.Taint) bool {
	for _, x := range taints {
		if x.Key == t.Key && x.Effect == t.Effect && x.Value == t.Value {
			return true
		}
	}
	return false
}

// UpdateStatus computes the node's status (heartbeat, conditions,
// resources, info, images) and patches it.
func (r *NodeRegistrar) UpdateStatus(ctx context.Context) error {
	return r.syncStatus(ctx, true)
}

// syncStatus computes the node's status and patches it when it changed
// (heartbeat times aside), when the pod CIDR was handed over, when force
// is set, or when ReportInterval (plus a spread) has passed since the last
// patch. Matches the kubelet's tryUpdateNodeStatus (updateNode,
// nodeStatusHasChanged, isUpdateStatusPeriodExpired, calculateDelay,
// patchNodeStatus), retried on conflict.
func (r *NodeRegistrar) syncStatus(ctx context.Context, force bool) error {
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	nodes := r.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, r.opts.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		next := cur.DeepCopy()
		cidrChanged := r.updatePodCIDR(ctx, next)
		if err := r.fillStatus(ctx, next); err != nil {
			return err
		}
		changed := cidrChanged || nodeStatusHasChanged(&cur.Status, &next.Status)
		now := r.opts.Now()
		if !changed && !force && now.Sub(r.lastReport) < r.opts.ReportInterval+r.reportDelay {
			return nil
		}
		if _, _, err := nodeutil.PatchNodeStatus(r.client.CoreV1(), types.NodeName(r.opts.Name), cur, next); err != nil {
			return err
		}
		r.reportDelay = 0
		if changed || r.lastReport.IsZero() {
			r.reportDelay = time.Duration(float64(r.opts.ReportInterval) * (rand.Float64() - 0.5))
		}
		r.lastReport = now
		return nil
	})
}

// nodeStatusHasChanged compares two statuses ignoring the conditions'
// heartbeat times, as the kubelet's nodeStatusHasChanged.
func nodeStatusHasChanged(old, cur *v1.NodeStatus) bool {
	if len(old.Conditions) != len(cur.Conditions) {
		return true
	}
	strip := func(s *v1.NodeStatus) *v1.NodeStatus {
		c := s.DeepCopy()
		for i := range c.Conditions {
			c.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		slices.SortStableFunc(c.Conditions, func(a, b v1.NodeCondition) int { return strings.Compare(string(a.Type), string(b.Type)) })
		return c
	}
	return !apiequality.Semantic.DeepEqual(strip(old), strip(cur))
}

// updatePodCIDR hands the Node's pod CIDRs to the runtime when they
// differ from what it last took, so that a runtime with a CNI config
// template (containerd's conf_template) writes the node's pod network.
// Matches the kubelet's updateNode → updatePodCIDR (CIDRs joined with a
// comma, errors logged, the next status update tries again).
func (r *NodeRegistrar) updatePodCIDR(ctx context.Context, n *v1.Node) (changed bool) {
	if r.opts.Runtime == nil || len(n.Spec.PodCIDRs) == 0 {
		return false
	}
	cidr := strings.Join(n.Spec.PodCIDRs, ",")
	r.mu.Lock()
	defer r.mu.Unlock()
	if cidr == r.podCIDR {
		return false
	}
	_, err := r.opts.Runtime.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{
		RuntimeConfig: &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: cidr}}})
	if err != nil {
		// As the kubelet's: a failed hand-over still counts as a change.
		logctx.From(ctx).Warn("failed to update pod CIDR", zap.String("podCIDR", cidr), zap.Error(err))
		return true
	}
	logctx.From(ctx).Info("updating pod CIDR", zap.String("originalPodCIDR", r.podCIDR), zap.String("newPodCIDR", cidr))
	r.podCIDR = cidr
	return true
}

// runtimeErrors is why the runtime keeps the node from being Ready, or
// nil. Matches the kubelet's updateRuntimeUp with runtimeState's
// runtimeErrors and networkErrors: RuntimeReady or NetworkReady missing or
// false, or no answer from the runtime for runtimeSyncThreshold.
func (r *NodeRegistrar) runtimeErrors(ctx context.Context) error {
	if r.opts.Runtime == nil {
		return nil
	}
	resp, err := r.opts.Runtime.Status(ctx, &runtimeapi.StatusRequest{})
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	if err != nil {
		if r.lastRuntimeOK.IsZero() {
			return errors.New("container runtime status check may not have completed yet")
		}
		if now.Sub(r.lastRuntimeOK) >= runtimeSyncThreshold {
			return fmt.Errorf("container runtime is down: %w", err)
		}
		return nil // the last answer stands until the threshold
	}
	r.lastRuntimeOK = now
	r.lastRuntimeStatus = resp
	return errors.Join(runtimestate.Errors(resp.GetStatus()))
}

// setRuntimeFeatures sets what the runtime last said it supports, as the
// kubelet's RuntimeHandlers and NodeFeatures setters do from CRI Status:
// each runtime handler, and whether the runtime honours a pod's
// supplementalGroupsPolicy (SupplementalGroupsPolicy, GA in v1.36; left
// unset when the runtime does not say). A handler's recursive read-only
// mounts are what the runtime says (RecursiveReadOnlyMounts); its user
// namespaces are reported false whatever the runtime says: sync refuses
// hostUsers: false, so no pod needing them may be placed here.
func (r *NodeRegistrar) setRuntimeFeatures(n *v1.Node) {
	r.mu.Lock()
	resp := r.lastRuntimeStatus
	r.mu.Unlock()
	if resp == nil {
		return
	}
	handlers := make([]v1.NodeRuntimeHandler, 0, len(resp.GetRuntimeHandlers()))
	for _, h := range resp.GetRuntimeHandlers() {
		handlers = append(handlers, v1.NodeRuntimeHandler{Name: h.GetName(), Features: &v1.NodeRuntimeHandlerFeatures{
			RecursiveReadOnlyMounts: ptr(h.GetFeatures().GetRecursiveReadOnlyMounts()), UserNamespaces: ptr(false),
		}})
	}
	n.Status.RuntimeHandlers = handlers
	if f := resp.GetFeatures(); f != nil {
		n.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: ptr(f.GetSupplementalGroupsPolicy())}
	}
}

// fastStatusUpdate polls every 100 ms after registration until the node
// can be posted Ready (the runtime's network up once it took the pod
// CIDR), then posts it at once rather than at the next status period.
// Matches the kubelet's fastStatusUpdateOnce / fastNodeStatusUpdate,
// bounded by nodeReadyGracePeriod.
func (r *NodeRegistrar) fastStatusUpdate(ctx context.Context) {
	log := logctx.From(ctx)
	deadline := time.Now().Add(nodeReadyGracePeriod)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		cur, err := r.client.CoreV1().Nodes().Get(ctx, r.opts.Name, metav1.GetOptions{})
		if err == nil {
			if c := findCondition(cur.Status.Conditions, v1.NodeReady); c != nil && c.Status == v1.ConditionTrue {
				return
			}
			r.updatePodCIDR(ctx, cur)
			if r.runtimeErrors(ctx) == nil {
				log.Info("fast updating node status as it just became ready")
				if err := r.UpdateStatus(ctx); err != nil {
					log.Info("node status update failed", zap.Error(err))
				}
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	log.Error("node not becoming ready in time after startup")
}

func findCondition(cs []v1.NodeCondition, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// leaseDurationSeconds is the kubelet's default node lease duration (40 s).
const leaseDurationSeconds = 40

// RenewLease creates or renews the node's Lease, owned by the Node so that
// deleting the Node deletes it. Matches the kubelet's nodelease controller.
func (r *NodeRegistrar) RenewLease(ctx context.Context) error {
	leases := r.client.CoordinationV1().Leases(LeaseNamespace)
	now := metav1.NewMicroTime(r.opts.Now())
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := leases.Get(ctx, r.opts.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			l := &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: r.opts.Name, Namespace: LeaseNamespace},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity:       &r.opts.Name,
					LeaseDurationSeconds: ptr(int32(leaseDurationSeconds)),
					RenewTime:            &now,
				},
			}
			if node, err := r.client.CoreV1().Nodes().Get(ctx, r.opts.Name, metav1.GetOptions{}); err == nil {
				l.OwnerReferences = []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
				}}
			}
			_, err = leases.Create(ctx, l, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		next := cur.DeepCopy()
		next.Spec.HolderIdentity = &r.opts.Name
		next.Spec.LeaseDurationSeconds = ptr(int32(leaseDurationSeconds))
		next.Spec.RenewTime = &now
		_, err = leases.Update(ctx, next, metav1.UpdateOptions{})
		return err
	})
}

func ptr[T any](v T) *T { return &v }
