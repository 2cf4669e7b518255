package client

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
)

// PodFromStruct decodes a pod as the PodService sends it: the core/v1 JSON
// form held in a Struct.
func PodFromStruct(s *structpb.Struct) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	if err := fromStruct(s, pod); err != nil {
		return nil, fmt.Errorf("decoding pod: %w", err)
	}
	return pod, nil
}

// EventFromStruct decodes a core/v1 Event held in a Struct.
func EventFromStruct(s *structpb.Struct) (*corev1.Event, error) {
	ev := &corev1.Event{}
	if err := fromStruct(s, ev); err != nil {
		return nil, fmt.Errorf("decoding event: %w", err)
	}
	return ev, nil
}

// ObjectMap is the object as a generic map, every field kept, with
// apiVersion and kind filled in when the server left them out: what -o json
// and -o yaml print, like kubectl's unstructured output.
func ObjectMap(s *structpb.Struct, kind string) map[string]any {
	m := s.AsMap()
	if _, ok := m["apiVersion"]; !ok {
		m["apiVersion"] = "v1"
	}
	if _, ok := m["kind"]; !ok {
		m["kind"] = kind
	}
	return m
}

func fromStruct(s *structpb.Struct, into any) error {
	if s == nil {
		return fmt.Errorf("empty object")
	}
	// Through encoding/json rather than protojson: the Struct is already the
	// object's JSON form, and the k8s types only know encoding/json.
	b, err := json.Marshal(s.AsMap())
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// ToStruct is the inverse of PodFromStruct, for fakes and tests.
func ToStruct(obj any) (*structpb.Struct, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return structpb.NewStruct(m)
}
