package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/logs"
)

// getContainerLogs streams a container's log, with the PodLogOptions of the
// query (follow, previous, tailLines or the older tail, sinceSeconds,
// sinceTime, timestamps, limitBytes), as the API server asks for it on
// behalf of `kubectl logs`. Matches the kubelet's getContainerLogs and
// GetKubeletContainerLogs: a query that does not decode is 400, one that
// does not validate 422, an unknown pod or container 404, a container with
// no log to show (waiting, no previous instance) 400; the log is flushed
// as it is written.
func (s *Server) getContainerLogs(w http.ResponseWriter, r *http.Request) {
	ns, podName, container := r.PathValue("podNamespace"), r.PathValue("podID"), r.PathValue("containerName")
	opts, err := decodePodLogOptions(r.URL.Query())
	if err != nil {
		http.Error(w, fmt.Sprintf("Unable to decode query: %v", err), http.StatusBadRequest)
		return
	}
	if err := validatePodLogOptions(opts); err != nil {
		http.Error(w, fmt.Sprintf("Invalid request: %v", err), http.StatusUnprocessableEntity)
		return
	}
	// The kubelet serves only both streams together while its
	// PodLogsQuerySplitStreams gate is alpha (off by default).
	if opts.Stream != nil && *opts.Stream != v1.LogStreamAll {
		http.Error(w, fmt.Sprintf("unable to return the given log stream: %q: only %q is served", *opts.Stream, v1.LogStreamAll), http.StatusBadRequest)
		return
	}
	pod := s.opts.Pods.GetPodByFullName(ns, podName)
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %q does not exist", podName), http.StatusNotFound)
		return
	}
	if getContainerSpec(pod, container) == nil {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, podName), http.StatusNotFound)
		return
	}
	id, err := logs.ContainerLogID(pod.Name, &pod.Status, container, opts.Previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
	err = logs.ContainerLogs(r.Context(), s.opts.Runtime, id, logs.OptionsFrom(opts, s.opts.Now()), fw, fw)
	switch {
	case err == nil:
	case opts.Follow && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		// The client left a followed log: that is how a follow ends.
	case !fw.wrote:
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		logctx.From(r.Context()).Info("container log cut short", zap.String("container", id), zap.Error(err))
	}
}

// getContainerSpec is the container of pod named name, init or ephemeral
// included; nil when the spec has none (the kubelet's GetContainerSpec).
func getContainerSpec(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}

// flushWriter flushes every write to the client, so a followed log arrives
// line by line (the kubelet's flushwriter).
type flushWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	wrote bool
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.wrote = true
	n, err := f.w.Write(p)
	if err != nil {
		return n, err
	}
	if err := f.rc.Flush(); err != nil {
		return n, fmt.Errorf("flush: %w", err)
	}
	return n, nil
}

// decodePodLogOptions reads v1.PodLogOptions from query parameters as the
// API server encodes them (its query-parameter conversions: a bool is
// false only for "0", "f", "false", "n" or "no"; integers in base 10;
// sinceTime in RFC 3339), with the kubelet's compatibility for the old
// "tail" parameter ("all" is no limit).
func decodePodLogOptions(q url.Values) (*v1.PodLogOptions, error) {
	opts := &v1.PodLogOptions{}
	if tail := q.Get("tail"); tail != "" {
		q.Del("tailLines")
		if tail != "all" {
			q.Set("tailLines", tail)
		}
	}
	boolParam := func(name string) bool {
		vs, ok := q[name]
		if !ok || len(vs) == 0 {
			return false
		}
		switch strings.ToLower(vs[0]) {
		case "0", "f", "false", "n", "no":
			return false
		}
		return true
	}
	intParam := func(name string) (*int64, error) {
		vs, ok := q[name]
		if !ok || len(vs) == 0 {
			return nil, nil
		}
		n, err := strconv.ParseInt(vs[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &n, nil
	}
	opts.Container = q.Get("container")
	opts.Follow = boolParam("follow")
	opts.Previous = boolParam("previous")
	opts.Timestamps = boolParam("timestamps")
	opts.InsecureSkipTLSVerifyBackend = boolParam("insecureSkipTLSVerifyBackend")
	var err error
	if opts.SinceSeconds, err = intParam("sinceSeconds"); err != nil {
		return nil, err
	}
	if opts.TailLines, err = intParam("tailLines"); err != nil {
		return nil, err
	}
	if opts.LimitBytes, err = intParam("limitBytes"); err != nil {
		return nil, err
	}
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, fmt.Errorf("sinceTime: %w", err)
		}
		opts.SinceTime = &metav1.Time{Time: t}
	}
	if s := q.Get("stream"); s != "" {
		opts.Stream = &s
	}
	return opts, nil
}

// validatePodLogOptions is the API's ValidatePodLogOptions.
func validatePodLogOptions(o *v1.PodLogOptions) error {
	var errs []error
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, fmt.Errorf("tailLines: Invalid value: %d: must be greater than or equal to 0", *o.TailLines))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, fmt.Errorf("limitBytes: Invalid value: %d: must be greater than 0", *o.LimitBytes))
	}
	switch {
	case o.SinceSeconds != nil && o.SinceTime != nil:
		errs = append(errs, errors.New("at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		errs = append(errs, fmt.Errorf("sinceSeconds: Invalid value: %d: must be greater than 0", *o.SinceSeconds))
	}
	if o.Stream != nil {
		switch *o.Stream {
		case v1.LogStreamAll, v1.LogStreamStdout, v1.LogStreamStderr:
		default:
			errs = append(errs, fmt.Errorf("stream: Unsupported value: %q", *o.Stream))
		}
		if *o.Stream != v1.LogStreamAll && o.TailLines != nil {
			errs = append(errs, errors.New("`tailLines` and specific `stream` are mutually exclusive for now"))
		}
	}
	return errors.Join(errs...)
}
