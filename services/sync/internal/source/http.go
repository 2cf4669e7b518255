package source

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/manifest"
)

// maxManifestBytes bounds a manifest URL's answer.
const maxManifestBytes = 10 << 20

// HTTPSource reads static pods from a URL, like the kubelet's HTTP source
// (pkg/kubelet/config/http.go, sourceURL): it fetches the URL at once and
// every period, with the configured headers. A 200 answer holding one pod,
// several pod documents, or a PodList is the source's whole set (the
// kubelet's extractFromURL, which tries a single pod, then a pod list); an
// empty answer is an empty set. The pods are defaulted and validated as
// static pods (names get the node suffix, UIDs hash the content and the
// URL). An unchanged answer publishes nothing. A failed fetch, a non-200
// answer or an invalid manifest keeps the last good set, as the kubelet
// does, and is reported once until the error changes.
type HTTPSource struct {
	url       string
	header    http.Header
	nodeName  string
	period    time.Duration
	cfg       *PodConfig
	onInvalid InvalidManifestFunc
	client    *http.Client

	// last is the last answer published; reported the last error reported.
	last     []byte
	fetched  bool
	reported string
}

// NewHTTPSource returns a source reading url into cfg every period.
func NewHTTPSource(url string, header http.Header, nodeName string, period time.Duration, cfg *PodConfig, onInvalid InvalidManifestFunc) *HTTPSource {
	if onInvalid == nil {
		onInvalid = func(string, error) {}
	}
	return &HTTPSource{url: url, header: header, nodeName: nodeName, period: period, cfg: cfg, onInvalid: onInvalid,
		client: &http.Client{Timeout: 10 * time.Second}}
}

// Run fetches the URL at once, then every period, until ctx ends.
func (h *HTTPSource) Run(ctx context.Context) {
	t := time.NewTicker(h.period)
	defer t.Stop()
	for {
		h.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// poll fetches once and publishes a changed, valid answer.
func (h *HTTPSource) poll(ctx context.Context) {
	data, err := h.fetch(ctx)
	var pods []*v1.Pod
	if err == nil && h.fetched && bytes.Equal(data, h.last) {
		return
	}
	if err == nil {
		pods, err = h.decode(data)
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if err.Error() != h.reported {
			h.reported = err.Error()
			logctx.From(ctx).Error("cannot read static pods from the manifest URL, keeping the last good set",
				zap.String("url", h.url), zap.Error(err))
			h.onInvalid(h.url, err)
		}
		return
	}
	h.last, h.fetched, h.reported = data, true, ""
	h.cfg.Set(ctx, HTTPSourceName, pods)
}

// fetch GETs the URL with the configured headers and returns a 200 answer's
// body.
func (h *HTTPSource) fetch(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return nil, err
	}
	for k, vs := range h.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", h.url, resp.Status)
	}
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%s: answer larger than %d bytes", h.url, maxManifestBytes)
	}
	return data, nil
}

// decode turns an answer into static pods: pod documents, or a PodList
// whose items are decoded as pod documents are (strictly).
func (h *HTTPSource) decode(data []byte) ([]*v1.Pod, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return []*v1.Pod{}, nil
	}
	if items, ok, err := podListItems(data); err != nil {
		return nil, fmt.Errorf("%s: %w", h.url, err)
	} else if ok {
		data = items
	}
	pods, err := manifest.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.url, err)
	}
	return staticPods(pods, defaults.Source{Kind: defaults.SourceHTTP, Location: h.url}, h.nodeName)
}

// podListItems returns a PodList's items as a stream of JSON pod documents
// (with apiVersion and kind, so manifest.Decode checks them like any pod),
// and false for anything that is not a PodList.
func podListItems(data []byte) ([]byte, bool, error) {
	var head struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil || head.Kind != "PodList" {
		return nil, false, nil
	}
	var out bytes.Buffer
	for i, item := range head.Items {
		var obj map[string]any
		if err := json.Unmarshal(item, &obj); err != nil {
			return nil, true, fmt.Errorf("items[%d]: %w: %v", i, errdefs.ErrInvalidArgument, err)
		}
		if _, ok := obj["apiVersion"]; !ok {
			obj["apiVersion"] = "v1"
		}
		if _, ok := obj["kind"]; !ok {
			obj["kind"] = "Pod"
		}
		doc, err := json.Marshal(obj)
		if err != nil {
			return nil, true, err
		}
		out.Write(doc)
		out.WriteByte('\n')
	}
	return out.Bytes(), true, nil
}
