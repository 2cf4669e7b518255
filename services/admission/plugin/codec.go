package plugin

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// Objects travel in the Kubernetes protobuf encoding of k8s.io/api (the
// generated Marshal/Unmarshal), not JSON: it keeps every core/v1 field and is
// fast. A plugin that keeps active sets (active_sets.go) is sent a full
// node's active pods once and then only their changes (active_delta.go).

// EncodeRequest turns a Request into its wire form, with the whole active
// set.
func EncodeRequest(r *Request) (*pluginv1.AdmitRequest, error) {
	p, err := prepare(r, (*v1.Pod).Marshal, (*v1.Pod).Marshal)
	if err != nil {
		return nil, err
	}
	return p.wholeSet(), nil
}

// Prepared is a Request encoded once for every plugin a host asks
// (Encoder.Prepare). Each GRPCClient sends from it what its plugin lacks:
// the whole active set, or only what changed since its previous call.
type Prepared struct {
	pod, node []byte
	active    []preparedPod
}

type preparedPod struct {
	uid types.UID
	raw []byte
}

func prepare(r *Request, encodePod, encodeActive func(*v1.Pod) ([]byte, error)) (*Prepared, error) {
	out, err := prepareWith(r, encodePod, nil)
	if err != nil {
		return nil, err
	}
	out.active = make([]preparedPod, len(r.ActivePods))
	for i, p := range r.ActivePods {
		if p == nil {
			return nil, fmt.Errorf("encode admit request: active pod %d is nil", i)
		}
		out.active[i].uid = p.UID
		if out.active[i].raw, err = encodeActive(p); err != nil {
			return nil, fmt.Errorf("encode active pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return out, nil
}

// prepareWith encodes r's pod and node beside active, the active pods
// encoded already (Encoder's last set, which is never changed once made
// and so is shared between requests; nil for prepare to fill in).
func prepareWith(r *Request, encodePod func(*v1.Pod) ([]byte, error), active []preparedPod) (*Prepared, error) {
	if r == nil || r.Pod == nil {
		return nil, fmt.Errorf("encode admit request: no pod")
	}
	out := &Prepared{active: active}
	var err error
	if out.pod, err = encodePod(r.Pod); err != nil {
		return nil, fmt.Errorf("encode pod %s/%s: %w", r.Pod.Namespace, r.Pod.Name, err)
	}
	if out.node, err = encodeNode(r.Node); err != nil {
		return nil, err
	}
	return out, nil
}

// encodeNode encodes node, or nothing for no node.
func encodeNode(node *v1.Node) ([]byte, error) {
	if node == nil {
		return nil, nil
	}
	b, err := node.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encode node %s: %w", node.Name, err)
	}
	return b, nil
}

// wholeSet is the request with every active pod and no active_set: what a
// plugin that keeps no sets is sent.
func (p *Prepared) wholeSet() *pluginv1.AdmitRequest {
	return &pluginv1.AdmitRequest{Pod: p.pod, Node: p.node, ActivePods: p.raws()}
}

func (p *Prepared) raws() [][]byte {
	out := make([][]byte, len(p.active))
	for i, a := range p.active {
		out[i] = a.raw
	}
	return out
}

// DecodeRequest is the inverse of EncodeRequest. An empty node field decodes
// to a nil Node.
func DecodeRequest(in *pluginv1.AdmitRequest) (*Request, error) {
	return decodeRequest(in, func(b []byte) (*v1.Pod, error) {
		p := &v1.Pod{}
		return p, p.Unmarshal(b)
	})
}

func decodeRequest(in *pluginv1.AdmitRequest, decodeActive func([]byte) (*v1.Pod, error)) (*Request, error) {
	if len(in.GetPod()) == 0 {
		return nil, fmt.Errorf("decode admit request: no pod")
	}
	r := &Request{Pod: &v1.Pod{}, ActivePods: make([]*v1.Pod, len(in.GetActivePods()))}
	if err := r.Pod.Unmarshal(in.GetPod()); err != nil {
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	for i, b := range in.GetActivePods() {
		p, err := decodeActive(b)
		if err != nil {
			return nil, fmt.Errorf("decode active pod %d: %w", i, err)
		}
		r.ActivePods[i] = p
	}
	if len(in.GetNode()) > 0 {
		r.Node = &v1.Node{}
		if err := r.Node.Unmarshal(in.GetNode()); err != nil {
			return nil, fmt.Errorf("decode node: %w", err)
		}
	}
	return r, nil
}
