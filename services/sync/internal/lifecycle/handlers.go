package lifecycle

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/prober/probe"
)

// PodStatusProvider reads a pod's runtime status; an httpGet hook without
// a host goes to the pod's first IP. sync's runtime manager satisfies it.
type PodStatusProvider interface {
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error)
}

// HTTPDoer sends an HTTP request; *http.Client satisfies it.
type HTTPDoer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Recorder records pod and container events; sync's events.Recorder
// satisfies it. Implementations must be safe for concurrent use.
type Recorder interface {
	Eventf(pod *v1.Pod, eventType, reason, messageFmt string, args ...any)
	EventfContainer(pod *v1.Pod, containerName, eventType, reason, messageFmt string, args ...any)
}

// Event reasons, the kubelet's values.
const (
	ReasonFailedPostStartHook   = "FailedPostStartHook"
	ReasonFailedPreStopHook     = "FailedPreStopHook"
	ReasonLifecycleHTTPFallback = "LifecycleHTTPFallback"
)

// maxRespBodyLength bounds how much of a hook's response is drained so the
// connection can be reused, as the kubelet's discardHTTPRespBody.
const maxRespBodyLength = 10 * 1 << 10

// Options configure a HandlerRunner; all fields may be zero.
type Options struct {
	// Execer runs exec hooks; nil makes them fail.
	Execer probe.Execer
	// PodStatus gives the pod IP for httpGet hooks without a host; nil
	// makes such hooks fail.
	PodStatus PodStatusProvider
	// HTTP sends httpGet hooks; nil is the kubelet's lifecycle client
	// (newInsecureHTTPClient). Status codes are not judged either way.
	HTTP HTTPDoer
	// Recorder receives hook events; nil records none.
	Recorder Recorder
	// TimeUnit is the length of one second of a sleep hook and of grace
	// periods; zero is time.Second. Tests shorten it.
	TimeUnit time.Duration
}

// HandlerRunner runs lifecycle handlers. It matches the kubelet's
// lifecycle.handlerRunner.
type HandlerRunner struct {
	execer    probe.Execer
	podStatus PodStatusProvider
	http      HTTPDoer
	recorder  Recorder
	timeUnit  time.Duration
}

// NewHandlerRunner returns a HandlerRunner.
func NewHandlerRunner(opts Options) *HandlerRunner {
	hr := &HandlerRunner{
		execer:    opts.Execer,
		podStatus: opts.PodStatus,
		http:      opts.HTTP,
		recorder:  opts.Recorder,
		timeUnit:  opts.TimeUnit,
	}
	if hr.http == nil {
		hr.http = newInsecureHTTPClient()
	}
	if hr.timeUnit <= 0 {
		hr.timeUnit = time.Second
	}
	return hr
}

// newInsecureHTTPClient is the client of httpGet hooks: HTTPS without
// verifying the certificate (a hook reaches the pod's own server, usually
// with a self-signed or no certificate at all), and redirects followed to
// the same host only, as for probes. Matches the
// insecureContainerLifecycleHTTPClient of the kubelet's NewMainKubelet.
func newInsecureHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // hooks do not verify certificates, as the kubelet's
		},
		CheckRedirect: probe.RedirectChecker,
	}
}

// Run runs one handler for the container. On failure it returns the
// kubelet's message for the failure ("Exec lifecycle hook ([cmd]) for
// Container "c" in Pod "p_ns(uid)" failed - error: ..., message: ...") and
// the error; on success both are empty. Matches the kubelet's
// handlerRunner.Run.
func (hr *HandlerRunner) Run(ctx context.Context, containerID container.ContainerID, pod *v1.Pod, c *v1.Container, handler *v1.LifecycleHandler) (string, error) {
	log := logctx.From(ctx).With(zap.String("pod", pod.Namespace+"/"+pod.Name), zap.String("container", c.Name))
	switch {
	case handler.Exec != nil:
		var output []byte
		var err error
		if hr.execer == nil {
			err = errors.New("exec hooks are not supported: no Execer configured")
		} else {
			// The kubelet passes no timeout: a hook may run as long as
			// it likes (preStop is bounded by the grace period instead).
			output, err = probe.RunInContainer(ctx, hr.execer, containerID.ID, handler.Exec.Command, 0)
		}
		if err != nil {
			msg := fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				handler.Exec.Command, c.Name, formatPod(pod), err, string(output))
			log.Debug("exec lifecycle hook failed", zap.Strings("command", handler.Exec.Command), zap.Error(err))
			return msg, err
		}
		return "", nil
	case handler.HTTPGet != nil:
		if err := hr.runHTTPHandler(ctx, pod, c, handler); err != nil {
			msg := fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				handler.HTTPGet.Path, c.Name, formatPod(pod), err)
			log.Debug("http lifecycle hook failed", zap.String("path", handler.HTTPGet.Path), zap.Error(err))
			return msg, err
		}
		return "", nil
	case handler.Sleep != nil:
		if err := hr.runSleepHandler(ctx, handler.Sleep.Seconds); err != nil {
			msg := fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				handler.Sleep.Seconds, c.Name, formatPod(pod), err)
			log.Debug("sleep lifecycle hook failed", zap.Int64("seconds", handler.Sleep.Seconds), zap.Error(err))
			return msg, err
		}
		return "", nil
	default:
		err := fmt.Errorf("invalid handler: %v", handler)
		return fmt.Sprintf("Cannot run handler: %v", err), err
	}
}

// runSleepHandler sleeps, or gives up when ctx ends. Matches the kubelet's
// runSleepHandler (PodLifecycleSleepAction, GA), message included.
func (hr *HandlerRunner) runSleepHandler(ctx context.Context, seconds int64) error {
	t := time.NewTimer(time.Duration(seconds) * hr.timeUnit)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errors.New("container terminated before sleep hook finished")
	case <-t.C:
		return nil
	}
}

// runHTTPHandler sends the hook's GET. Matches the kubelet's
// runHTTPHandler: the host is the action's or the pod's first IP; only a
// transport error fails the hook (the status code is not judged); an HTTPS
// hook answered in plain HTTP is retried over HTTP without the
// Authorization header, with a LifecycleHTTPFallback event.
func (hr *HandlerRunner) runHTTPHandler(ctx context.Context, pod *v1.Pod, c *v1.Container, handler *v1.LifecycleHandler) error {
	host := handler.HTTPGet.Host
	if host == "" {
		if hr.podStatus == nil {
			return errors.New("failed to find networking container: no pod status provider")
		}
		status, err := hr.podStatus.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			return err
		}
		if len(status.IPs) == 0 {
			return fmt.Errorf("failed to find networking container: %v", status)
		}
		host = status.IPs[0]
	}
	action := *handler.HTTPGet
	action.Host = host
	req, err := probe.NewHTTPGetRequest(&action, c, host, "lifecycle")
	if err != nil {
		return err
	}
	req = req.WithContext(ctx)
	resp, err := hr.http.Do(req)
	discardBody(resp)

	if isHTTPResponseError(err) {
		req := req.Clone(ctx)
		req.URL.Scheme = "http"
		req.Header.Del("Authorization")
		resp, httpErr := hr.http.Do(req)
		if httpErr == nil {
			if hr.recorder != nil {
				hr.recorder.Eventf(pod, v1.EventTypeWarning, ReasonLifecycleHTTPFallback,
					"request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", req.URL.Host)
			}
			err = nil
		}
		discardBody(resp)
	}
	return err
}

func discardBody(resp *http.Response) {
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if resp.ContentLength <= maxRespBodyLength {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxRespBodyLength))
	}
}

// isHTTPResponseError reports an HTTPS request answered in plain HTTP, as
// the kubelet's isHTTPResponseError.
func isHTTPResponseError(err error) bool {
	var urlErr *url.Error
	if err == nil || !errors.As(err, &urlErr) {
		return false
	}
	return strings.Contains(urlErr.Err.Error(), "server gave HTTP response to HTTPS client")
}

// formatPod renders a pod as the kubelet's format.Pod: name_namespace(uid).
func formatPod(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
