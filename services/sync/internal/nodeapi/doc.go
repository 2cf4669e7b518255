// Package nodeapi is the kubelet's node API (port 10250 on a kubelet) served
// by splitlet-sync: the HTTPS endpoint the API server proxies `kubectl logs`,
// `exec`, `attach` and `port-forward` to (status.daemonEndpoints.kubeletEndpoint
// of the Node), with the kubelet's paths and semantics
// (pkg/kubelet/server/server.go):
//
//	/healthz                                      "ok"
//	/pods                                         the pods sync runs, a v1.PodList
//	/runningpods/                                 the pods the runtime runs, a v1.PodList
//	/containerLogs/{namespace}/{pod}/{container}  a container's log (PodLogOptions as query)
//	/exec/{namespace}/{pod}[/{uid}]/{container}   a command in the container, streamed
//	/attach/{namespace}/{pod}[/{uid}]/{container} the container's process, streamed
//	/portForward/{namespace}/{pod}[/{uid}]        the pod's ports, streamed
//	/metrics                                      sync's Prometheus registry
//	/stats/summary                                the kubelet's stats Summary (only_cpu_and_memory=true for less)
//	/metrics/resource                             the kubelet's resource metrics, from the same stats
//	/flagz                                        sync's flags and their values (zpages.go)
//	/statusz                                      start time, uptime, versions and paths (zpages.go)
//
// Streams are the runtime's: exec, attach and port-forward ask it (CRI
// Exec, Attach, PortForward) for a streaming URL and proxy the client's
// upgraded connection there (streaming.go).
//
// Every request is authenticated and authorized as the kubelet does it
// (pkg/kubelet/server/auth.go, cmd/kubelet/app/auth.go): client
// certificates verified against a client CA, bearer tokens through
// TokenReview, then a SubjectAccessReview on the node's subresource the path
// maps to (nodes/proxy, nodes/log, nodes/stats, nodes/metrics,
// nodes/healthz, nodes/pods), with k8s.io/apiserver's delegating
// authenticator and authorizer and the kubelet's cache TTLs. A request that
// authenticates as nobody gets 401, one whose user may not get 403.
//
// Usage sketch:
//
//	auth, runAuth, err := nodeapi.BuildAuth(nodeapi.AuthOptions{NodeName: node, Client: kubeClient, ClientCAFile: ca})
//	go runAuth(ctx)
//	summary := stats.New(stats.Options{NodeName: node, Runtime: criClient, Images: imageClient, RootDir: dir})
//	go summary.Run(ctx)
//	srv := nodeapi.New(nodeapi.Options{Pods: podManager, Runtime: criClient, Stats: summary, Metrics: reg, Auth: auth})
//	tlsConfig, err := nodeapi.TLSConfig(nodeapi.TLSOptions{CertFile: c, KeyFile: k, CertDir: dir, Host: node})
//	httpSrv := nodeapi.NewHTTPServer(addr, srv, tlsConfig)
package nodeapi
