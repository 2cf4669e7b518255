package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
)

// sniffBytes is how far the decoder looks into a stream to decide between
// JSON and YAML; the kubelet's and kubectl's readers use the same order of
// magnitude.
const sniffBytes = 4096

// DocumentError is a failure to decode one document of a manifest stream.
// Index counts the documents the stream was split into, from 0, including
// documents that hold only comments; a file source adds the path in front.
// It unwraps to errdefs.ErrInvalidArgument.
type DocumentError struct {
	Index int
	Err   error
}

func (e *DocumentError) Error() string {
	return fmt.Sprintf("document %d: %v", e.Index, e.Err)
}

// Unwrap returns the cause, which wraps errdefs.ErrInvalidArgument.
func (e *DocumentError) Unwrap() error { return e.Err }

// Decode reads every document of data (YAML separated by `---`, or a stream
// of JSON objects) and returns one Pod per non-empty document, in order.
// Every document must be apiVersion v1, kind Pod, and hold no field unknown
// to core/v1 Pod (field names are case-sensitive, as in the API server).
// The first failing document stops decoding; its error is a *DocumentError.
// Empty input, or input made only of empty documents, yields no pods and no
// error.
func Decode(data []byte) ([]*v1.Pod, error) {
	// The usual input, one JSON pod (what the API and bench/ send), is
	// decoded in one pass. A stream of several documents fails that pass
	// (data after the top-level value) and is read document by document.
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		if pod, ok := decodeValidPod(trimmed); ok {
			return []*v1.Pod{pod}, nil
		}
	}
	return decodeStream(data)
}

// decodeStream is Decode without its fast path: every document is split
// off the stream and decoded on its own.
func decodeStream(data []byte) ([]*v1.Pod, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), sniffBytes)
	var pods []*v1.Pod
	for index := 0; ; index++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return pods, nil
		}
		if err != nil {
			return nil, &DocumentError{Index: index, Err: fmt.Errorf("%w: %v", errdefs.ErrInvalidArgument, err)}
		}
		if isEmptyDocument(raw) {
			continue
		}
		pod, err := decodePod(raw)
		if err != nil {
			return nil, &DocumentError{Index: index, Err: err}
		}
		pods = append(pods, pod)
	}
}

// isEmptyDocument reports whether a document converted to JSON carries
// nothing: a YAML document of only comments or blank lines becomes `null`.
func isEmptyDocument(raw json.RawMessage) bool {
	trimmed := bytes.TrimSpace(raw)
	return len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null"))
}

// typeMeta is read first, leniently, so that a wrong kind is reported as a
// wrong kind and not as a pile of unknown fields.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func decodePod(raw json.RawMessage) (*v1.Pod, error) {
	if bytes.TrimSpace(raw)[0] != '{' {
		return nil, fmt.Errorf("%w: a pod manifest must be an object", errdefs.ErrInvalidArgument)
	}
	// The usual manifest is a valid v1 Pod: one strict pass decides it.
	// Anything else is decoded again below, type first, so that the error
	// reported is the same as if the fast path did not exist.
	if pod, ok := decodeValidPod(raw); ok {
		return pod, nil
	}
	var tm typeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("%w: %v", errdefs.ErrInvalidArgument, err)
	}
	var typeErrs field.ErrorList
	switch tm.APIVersion {
	case "v1":
	case "":
		typeErrs = append(typeErrs, field.Required(field.NewPath("apiVersion"), "must be v1"))
	default:
		typeErrs = append(typeErrs, field.NotSupported(field.NewPath("apiVersion"), tm.APIVersion, []string{"v1"}))
	}
	switch tm.Kind {
	case "Pod":
	case "":
		typeErrs = append(typeErrs, field.Required(field.NewPath("kind"), "must be Pod"))
	default:
		typeErrs = append(typeErrs, field.NotSupported(field.NewPath("kind"), tm.Kind, []string{"Pod"}))
	}
	if len(typeErrs) > 0 {
		return nil, fmt.Errorf("%w: %v", errdefs.ErrInvalidArgument, typeErrs.ToAggregate())
	}

	// sigs.k8s.io/json is the decoder the API server's strict field
	// validation uses: case-sensitive names, and strict errors that carry the
	// full path of each unknown or duplicated field
	// (`unknown field "spec.containers[0].imagee"`).
	pod := &v1.Pod{}
	strictErrs, err := sigsjson.UnmarshalStrict(raw, pod)
	if err != nil {
		// A malformed quantity fails inside its own decoder, which does not
		// know where it is; say where.
		if errs := quantityErrors(raw); len(errs) > 0 {
			return nil, fmt.Errorf("%w: %v", errdefs.ErrInvalidArgument, errs.ToAggregate())
		}
		return nil, fmt.Errorf("%w: %v", errdefs.ErrInvalidArgument, err)
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, 0, len(strictErrs))
		for _, e := range strictErrs {
			msgs = append(msgs, e.Error())
		}
		// The API server words strict failures the same way.
		return nil, fmt.Errorf("%w: strict decoding error: %s", errdefs.ErrInvalidArgument, strings.Join(msgs, ", "))
	}
	return pod, nil
}

// decodeValidPod decodes raw in one strict pass and reports whether it is a
// v1 Pod with no strict or syntax error. On false the caller decodes again
// for the error, which is then worded as the API server words it.
func decodeValidPod(raw json.RawMessage) (*v1.Pod, bool) {
	pod := &v1.Pod{}
	strictErrs, err := sigsjson.UnmarshalStrict(raw, pod)
	if err != nil || len(strictErrs) > 0 || pod.APIVersion != "v1" || pod.Kind != "Pod" {
		return nil, false
	}
	return pod, true
}
