package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/proxy"
	translator "k8s.io/apiserver/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// Streaming: exec, attach and port-forward. As on a kubelet whose runtime
// serves its own streams (containerd, CRI-O), sync ends no stream itself:
// it asks the runtime (through the gateway) for a one-time streaming URL
// with CRI Exec, Attach or PortForward, then proxies the client's upgraded
// connection to that URL. What the API server sends a
// node depends on the Node: unless it lists ExtendWebSocketsToKubelet in
// status.declaredFeatures, the API server translates kubectl's WebSocket
// (v5.channel.k8s.io, and port-forward's SPDY-over-WebSocket tunnel) to
// SPDY itself, and SPDY is what every runtime's streaming server speaks, so
// it is passed through byte for byte. A WebSocket v5 client that reaches
// the node API directly is translated here, as the kubelet does with the
// ExtendWebSocketsToKubelet gate (beta, on by default, in v1.36).

// execRequestParams are the path and command of an exec or attach
// (the kubelet's execRequestParams): {podNamespace}/{podID}[/{uid}]/
// {containerName}, the command as repeated "command" query parameters.
type execRequestParams struct {
	podNamespace  string
	podName       string
	podUID        types.UID
	containerName string
	cmd           []string
}

// getExecRequestParams is the kubelet's.
func getExecRequestParams(r *http.Request) execRequestParams {
	return execRequestParams{
		podNamespace:  r.PathValue("podNamespace"),
		podName:       r.PathValue("podID"),
		podUID:        types.UID(r.PathValue("uid")),
		containerName: r.PathValue("containerName"),
		cmd:           r.URL.Query()["command"],
	}
}

// getExec runs a command in a container. The streams come from the query
// as the API server writes them (input, output, error, tty set to "1":
// remotecommandserver.NewOptions); none is 400, an unknown pod or container
// 404, a runtime error the status streaming.WriteError gives its gRPC code.
// Matches the kubelet's getExec and GetExec.
func (s *Server) getExec(w http.ResponseWriter, r *http.Request) {
	params := getExecRequestParams(r)
	streamOpts, err := remotecommandserver.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, id, ok := s.findContainer(w, r, params)
	if !ok {
		return
	}
	resp, err := s.opts.Runtime.Exec(r.Context(), &runtimeapi.ExecRequest{
		ContainerId: id, Cmd: params.cmd, Tty: streamOpts.TTY,
		Stdin: streamOpts.Stdin, Stdout: streamOpts.Stdout, Stderr: streamOpts.Stderr,
	})
	if err != nil {
		_ = streaming.WriteError(err, w)
		return
	}
	s.proxyStream(w, r, "exec", resp.GetUrl(), streamOpts)
}

// getAttach attaches to a container's main process, as getExec runs a
// command; the TTY the runtime is asked for is the container spec's (a
// process's TTY cannot change once started). Matches the kubelet's
// getAttach and GetAttach.
func (s *Server) getAttach(w http.ResponseWriter, r *http.Request) {
	params := getExecRequestParams(r)
	streamOpts, err := remotecommandserver.NewOptions(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	spec, id, ok := s.findContainer(w, r, params)
	if !ok {
		return
	}
	resp, err := s.opts.Runtime.Attach(r.Context(), &runtimeapi.AttachRequest{
		ContainerId: id, Tty: spec.TTY,
		Stdin: streamOpts.Stdin, Stdout: streamOpts.Stdout, Stderr: streamOpts.Stderr,
	})
	if err != nil {
		_ = streaming.WriteError(err, w)
		return
	}
	s.proxyStream(w, r, "attach", resp.GetUrl(), streamOpts)
}

// getPortForward forwards ports of a pod's sandbox. Over SPDY the ports
// arrive later, one stream pair per connection; a WebSocket request names
// them in "port" query parameters (portforward.NewV4Options: a bad one is
// 400); a WebSocket tunnel carrying SPDY is unwrapped here. An unknown pod,
// or one of another UID, is 404. Matches the kubelet's getPortForward and
// GetPortForward.
func (s *Server) getPortForward(w http.ResponseWriter, r *http.Request) {
	websocketSPDYTunnel := wsstream.IsWebSocketRequestWithTunnelingProtocol(r)
	portForwardOptions := &portforward.V4Options{}
	if !websocketSPDYTunnel {
		var err error
		if portForwardOptions, err = portforward.NewV4Options(r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	ns, name, uid := r.PathValue("podNamespace"), r.PathValue("podID"), types.UID(r.PathValue("uid"))
	pod := s.opts.Pods.GetPodByFullName(ns, name)
	if pod == nil {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return
	}
	if uid != "" && pod.UID != uid {
		http.Error(w, "pod not found", http.StatusNotFound)
		return
	}
	sandboxID, err := s.podSandboxID(r.Context(), pod.UID)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if sandboxID == "" {
		http.Error(w, fmt.Sprintf("failed to find sandboxID for pod %s/%s", ns, name), http.StatusNotFound)
		return
	}
	resp, err := s.opts.Runtime.PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sandboxID, Port: portForwardOptions.Ports})
	if err != nil {
		_ = streaming.WriteError(err, w)
		return
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		http.Error(w, fmt.Sprintf("the runtime's streaming URL: %v", err), http.StatusInternalServerError)
		return
	}
	var handler http.Handler = proxy.NewUpgradeAwareHandler(u, nil /*transport*/, false /*wrapTransport*/, true /*upgradeRequired*/, responder{})
	if websocketSPDYTunnel {
		s.opts.StreamMetrics.countWebSocket("portforward")
		handler = translator.NewTunnelingHandler(handler)
	}
	handler.ServeHTTP(w, r)
}

// proxyStream connects the client to the runtime's streaming URL: the
// upgrade (SPDY, or the WebSocket protocols the runtime speaks) proxied as
// is, a WebSocket v5.channel.k8s.io request translated to SPDY. A request
// that is no upgrade is 400. The kubelet's proxyStream of earlier releases,
// which v1.36 inlines into getExec and getAttach with the translation.
func (s *Server) proxyStream(w http.ResponseWriter, r *http.Request, subresource, rawURL string, streamOpts *remotecommandserver.Options) {
	u, err := url.Parse(rawURL)
	if err != nil {
		http.Error(w, fmt.Sprintf("the runtime's streaming URL: %v", err), http.StatusInternalServerError)
		return
	}
	var handler http.Handler = proxy.NewUpgradeAwareHandler(u, nil /*transport*/, false /*wrapTransport*/, true /*upgradeRequired*/, responder{})
	if wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		s.opts.StreamMetrics.countWebSocket(subresource)
		handler = translator.NewStreamTranslatorHandler(u, nil, 0, translator.Options{
			Stdin: streamOpts.Stdin, Stdout: streamOpts.Stdout, Stderr: streamOpts.Stderr, Tty: streamOpts.TTY,
		})
	}
	handler.ServeHTTP(w, r)
}

// responder answers a proxy failure: 500 as the kubelet's responder, or
// the status the proxy gave it (400 for a request that is no upgrade,
// which the kubelet answers 500).
type responder struct{}

var _ proxy.ErrorResponder = responder{}

func (responder) Error(w http.ResponseWriter, r *http.Request, err error) {
	logctx.From(r.Context()).Info("error while proxying a stream", zap.Error(err))
	code := http.StatusInternalServerError
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) && apiStatus.Status().Code != 0 {
		code = int(apiStatus.Status().Code)
	}
	http.Error(w, err.Error(), code)
}

// findContainer resolves an exec's or attach's container: the pod by name
// from sync's pods, of params.podUID when the path names one, the
// container by name in its spec, and the running instance in the runtime
// (the kubelet's findContainer: the runtime's running pods, FindPod,
// FindContainerByName). It answers 404 itself when any is missing (the
// kubelet answers 500 for a container that is not running) and 500 when
// the runtime cannot list.
func (s *Server) findContainer(w http.ResponseWriter, r *http.Request, params execRequestParams) (*v1.Container, string, bool) {
	pod := s.opts.Pods.GetPodByFullName(params.podNamespace, params.podName)
	if pod == nil {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return nil, "", false
	}
	if params.podUID != "" && pod.UID != params.podUID {
		http.Error(w, fmt.Sprintf("pod %s/%s not found", params.podNamespace, params.podName), http.StatusNotFound)
		return nil, "", false
	}
	spec := getContainerSpec(pod, params.containerName)
	if spec == nil {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", params.containerName, params.podName), http.StatusNotFound)
		return nil, "", false
	}
	id, err := s.runningContainerID(r.Context(), pod.UID, params.containerName)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, "", false
	}
	if id == "" {
		http.Error(w, fmt.Sprintf("container not found (%q)", params.containerName), http.StatusNotFound)
		return nil, "", false
	}
	return spec, id, true
}

// runningContainerID is the ID of the pod's running container of that
// name, "" when none runs: the kubelet's findContainer, which looks among
// the runtime's running pods.
func (s *Server) runningContainerID(ctx context.Context, uid types.UID, name string) (string, error) {
	resp, err := s.opts.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{
			kuberuntime.KubernetesPodUIDLabel:        string(uid),
			kuberuntime.KubernetesContainerNameLabel: name,
		},
	}})
	if err != nil {
		return "", fmt.Errorf("list containers: %w", err)
	}
	containers := resp.GetContainers()
	if len(containers) == 0 {
		return "", nil
	}
	// Newest first, should a restarted container's old instance still run.
	sort.Slice(containers, func(i, j int) bool { return containers[i].GetCreatedAt() > containers[j].GetCreatedAt() })
	return containers[0].GetId(), nil
}

// podSandboxID is the ID of the pod's newest ready sandbox, "" when it has
// none. The kubelet's getSandboxIDByPodUID sorts every sandbox of the pod
// newest first (podSandboxByCreatedThenID) after GetPortForward has found
// the pod running; only a ready sandbox has a network to forward into.
func (s *Server) podSandboxID(ctx context.Context, uid types.UID) (string, error) {
	resp, err := s.opts.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{kuberuntime.KubernetesPodUIDLabel: string(uid)},
	}})
	if err != nil {
		return "", fmt.Errorf("list sandboxes: %w", err)
	}
	sandboxes := resp.GetItems()
	if len(sandboxes) == 0 {
		return "", nil
	}
	sort.Slice(sandboxes, func(i, j int) bool {
		a, b := sandboxes[i], sandboxes[j]
		if a.GetMetadata().GetAttempt() != b.GetMetadata().GetAttempt() {
			return a.GetMetadata().GetAttempt() > b.GetMetadata().GetAttempt()
		}
		if a.GetCreatedAt() != b.GetCreatedAt() {
			return a.GetCreatedAt() > b.GetCreatedAt()
		}
		return a.GetId() < b.GetId()
	})
	return sandboxes[0].GetId(), nil
}
