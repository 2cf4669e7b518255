package apiserver

import (
	"context"
	"sort"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

// PodSetter receives a source's complete pod set; source.PodConfig is one.
type PodSetter interface {
	Set(ctx context.Context, source string, pods []*v1.Pod)
}

var _ PodSetter = (*source.PodConfig)(nil)

// MirrorSetter receives the node's mirror pods; MirrorManager is one.
type MirrorSetter interface {
	SetMirrors(mirrors []*v1.Pod)
}

// PodSource feeds the pods bound to one node to a PodSetter, and the
// node's mirror pods, which are never run, to a MirrorSetter.
type PodSource struct {
	client  kubernetes.Interface
	node    string
	out     PodSetter
	mirrors MirrorSetter
}

// NewPodSource returns a source of the pods whose spec.nodeName is node.
// Mirror pods go to mirrors (nil drops them): as in the kubelet's pod
// manager, they stand for static pods and are never synced themselves.
func NewPodSource(client kubernetes.Interface, node string, out PodSetter, mirrors MirrorSetter) *PodSource {
	return &PodSource{client: client, node: node, out: out, mirrors: mirrors}
}

// Run watches until ctx ends. It reports nothing until the informer's first
// list has completed, so that the mux does not take an empty set for "no
// pods" (SeenAllSources would let housekeeping kill running pods); after
// that it reports the full set on every change, like the kubelet's
// NewSourceApiserver, whose reflector sends the whole store each time.
func (s *PodSource) Run(ctx context.Context) {
	log := logctx.From(ctx).With(zap.String("source", SourceName))
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", s.node).String()
		}))
	podInformer := factory.Core().V1().Pods()
	inf := podInformer.Informer()
	// One pending signal is enough: each send reads the whole store.
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, n any) { poke(n) },
		DeleteFunc: poke,
	}); err != nil {
		log.Error("pod informer handler", zap.Error(err))
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	log.Info("API server pod source synced", zap.String("node", s.node))
	lister := podInformer.Lister()
	send := func() {
		all, err := lister.List(labels.Everything())
		if err != nil {
			log.Error("list pods", zap.Error(err))
			return
		}
		// The field selector already did this on a real API server; the
		// check keeps a pod of another node out whatever the server does.
		pods := make([]*v1.Pod, 0, len(all))
		var mirrors []*v1.Pod
		for _, p := range all {
			switch {
			case p.Spec.NodeName != s.node:
			case IsMirrorPod(p):
				mirrors = append(mirrors, p)
			default:
				pods = append(pods, p)
			}
		}
		if s.mirrors != nil {
			s.mirrors.SetMirrors(mirrors)
		}
		// The lister's objects are shared with the informer's cache; Set
		// copies them before it annotates them.
		sort.Slice(pods, func(i, j int) bool {
			return pods[i].Namespace+"/"+pods[i].Name < pods[j].Namespace+"/"+pods[j].Name
		})
		s.out.Set(ctx, SourceName, pods)
	}
	send()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			send()
		}
	}
}
