package plugin

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// Objects travel in the Kubernetes protobuf encoding of k8s.io/api (the
// generated Marshal/Unmarshal), not JSON: it keeps every core/v1 field and is
// fast enough to send a full node's active pods on every admission.

// EncodeRequest turns a Request into its wire form.
func EncodeRequest(r *Request) (*pluginv1.AdmitRequest, error) {
	return encodeRequest(r, (*v1.Pod).Marshal, (*v1.Pod).Marshal)
}

func encodeRequest(r *Request, encodePod, encodeActive func(*v1.Pod) ([]byte, error)) (*pluginv1.AdmitRequest, error) {
	if r == nil || r.Pod == nil {
		return nil, fmt.Errorf("encode admit request: no pod")
	}
	out := &pluginv1.AdmitRequest{ActivePods: make([][]byte, len(r.ActivePods))}
	var err error
	if out.Pod, err = encodePod(r.Pod); err != nil {
		return nil, fmt.Errorf("encode pod %s/%s: %w", r.Pod.Namespace, r.Pod.Name, err)
	}
	for i, p := range r.ActivePods {
		if p == nil {
			return nil, fmt.Errorf("encode admit request: active pod %d is nil", i)
		}
		if out.ActivePods[i], err = encodeActive(p); err != nil {
			return nil, fmt.Errorf("encode active pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	if r.Node != nil {
		if out.Node, err = r.Node.Marshal(); err != nil {
			return nil, fmt.Errorf("encode node %s: %w", r.Node.Name, err)
		}
	}
	return out, nil
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
