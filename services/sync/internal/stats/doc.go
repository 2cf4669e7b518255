// Package stats builds the kubelet's stats Summary
// (k8s.io/kubelet/pkg/apis/stats/v1alpha1) for the node API's
// /stats/summary and /metrics/resource, as the kubelet's CRI stats
// provider does without cAdvisor (pkg/kubelet/stats/cri_stats_provider.go,
// pkg/kubelet/server/stats/summary.go): pods and containers from CRI
// ListPodSandboxStats / ListContainerStats through the gateway, the node's
// CPU and memory from the root cgroup (cgroup v1 or v2), its filesystems
// from statfs, the image filesystem from CRI ImageFsInfo.
//
// Runtimes that do not fill usageNanoCores get it from two cumulative
// samples, kept per container as the kubelet keeps them: Run takes one
// every HousekeepingInterval (the kubelet's eviction manager does), and
// requests read the last rate.
//
//	p := stats.New(stats.Options{NodeName: node, Runtime: rt, Images: images, RootDir: stateDir, PodLogsRoot: "/var/log/pods"})
//	go p.Run(ctx)
//	summary, err := p.Get(ctx, false)
package stats
