package pluginhost

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// benchPod is a pod of typical size: two containers with resources, ports,
// env, a probe, labels and annotations (about 1 KiB encoded).
func benchPod(i int) *v1.Pod {
	name := fmt.Sprintf("web-%d", i)
	res := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("256Mi")},
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels:      map[string]string{"app": "web", "pod-template-hash": "5d9f7c"},
			Annotations: map[string]string{"kubernetes.io/config.source": "api", "kubernetes.io/config.seen": "2025-01-01T00:00:00Z"},
		},
		Spec: v1.PodSpec{
			NodeName: "node-1",
			Containers: []v1.Container{
				{
					Name: "app", Image: "registry.local/web:1.2.3", Resources: res,
					Ports:          []v1.ContainerPort{{ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
					Env:            []v1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "LOG", Value: "info"}},
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready"}}, PeriodSeconds: 5},
				},
				{Name: "sidecar", Image: "registry.local/proxy:0.9", Resources: res},
			},
			Tolerations: []v1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, QOSClass: v1.PodQOSBurstable, PodIP: "10.0.0.1"},
	}
}

// BenchmarkChainAdmit110 measures one admission through the chain with a
// single real out-of-process plugin (the image allow-list, over go-plugin
// gRPC with AutoMTLS) and 110 active pods, the kubelet's default maximum.
// It reports the latency distribution; the target is p99 under 1 ms.
//
//	steady: the active pods are the same objects on every call, as with a
//	        pod manager that replaces changed pods (encodings are reused).
//	fresh:  every call sends newly allocated active pods (nothing reused),
//	        the worst case.
func BenchmarkChainAdmit110(b *testing.B) {
	allowlist, _ := pluginBinaries(b)
	cfg := writeConfig(b, PluginConfig{
		Name: "image-allowlist", Path: allowlist, SHA256: sha256File(b, allowlist),
		Env: map[string]string{"SPLITLET_IMAGE_ALLOWLIST": "registry.local/"},
	})
	c, err := New(context.Background(), cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()

	active := make([]*v1.Pod, 110)
	for i := range active {
		active[i] = benchPod(i)
	}
	pod := benchPod(1000)
	ctx := context.Background()

	for _, mode := range []string{"steady", "fresh"} {
		b.Run(mode, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				attrs := &lifecycle.PodAdmitAttributes{Pod: pod, OtherPods: active}
				if mode == "fresh" {
					b.StopTimer()
					fresh := make([]*v1.Pod, len(active))
					for i, p := range active {
						fresh[i] = p.DeepCopy()
						fresh[i].ResourceVersion = fmt.Sprint(len(lat)) // new content each call
					}
					attrs.OtherPods = fresh
					b.StartTimer()
				}
				start := time.Now()
				res := c.Admit(ctx, attrs)
				lat = append(lat, time.Since(start))
				if !res.Admit {
					b.Fatalf("Admit = %+v", res)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
