package defaults

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestApplyStaticPodDefaults(t *testing.T) {
	fixed := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	now = func() time.Time { return fixed }
	t.Cleanup(func() { now = time.Now })

	file := Source{Kind: SourceFile, Location: "/etc/kubernetes/manifests/web.yaml"}
	tests := []struct {
		desc   string
		source Source
		node   string
		mutate func(*v1.Pod)
		check  func(*testing.T, *v1.Pod)
	}{
		{
			desc:   "file pod gets name suffix, node, annotations, toleration, phase",
			source: file,
			node:   "Node-1",
			check: func(t *testing.T, p *v1.Pod) {
				if p.Name != "web-node-1" {
					t.Errorf("name = %q", p.Name)
				}
				if p.Spec.NodeName != "Node-1" {
					t.Errorf("nodeName = %q", p.Spec.NodeName)
				}
				if p.Namespace != "default" {
					t.Errorf("namespace = %q", p.Namespace)
				}
				if len(p.UID) != 32 {
					t.Errorf("uid = %q, want 32 hex digits", p.UID)
				}
				a := p.Annotations
				if a[ConfigHashAnnotationKey] != string(p.UID) || a[ConfigSourceAnnotationKey] != "file" ||
					a[ConfigSeenAnnotationKey] != "2025-01-02T03:04:05.000000006Z" {
					t.Errorf("annotations = %v", a)
				}
				if len(p.Spec.Tolerations) != 1 || p.Spec.Tolerations[0].Operator != v1.TolerationOpExists || p.Spec.Tolerations[0].Effect != v1.TaintEffectNoExecute {
					t.Errorf("tolerations = %+v", p.Spec.Tolerations)
				}
				if p.Status.Phase != v1.PodPending {
					t.Errorf("phase = %q", p.Status.Phase)
				}
			},
		},
		{
			desc:   "http pod: no toleration, source http",
			source: Source{Kind: SourceHTTP, Location: "http://example/pods"},
			node:   "n",
			check: func(t *testing.T, p *v1.Pod) {
				if len(p.Spec.Tolerations) != 0 {
					t.Errorf("tolerations = %+v", p.Spec.Tolerations)
				}
				if p.Annotations[ConfigSourceAnnotationKey] != "http" {
					t.Errorf("source annotation = %q", p.Annotations[ConfigSourceAnnotationKey])
				}
			},
		},
		{
			desc:   "existing uid, seen time and equal toleration are kept",
			source: file,
			node:   "n",
			mutate: func(p *v1.Pod) {
				p.UID = "given"
				p.Annotations = map[string]string{ConfigSeenAnnotationKey: "earlier"}
				p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
			},
			check: func(t *testing.T, p *v1.Pod) {
				if p.UID != "given" || p.Annotations[ConfigHashAnnotationKey] != "given" {
					t.Errorf("uid = %q, hash = %q", p.UID, p.Annotations[ConfigHashAnnotationKey])
				}
				if p.Annotations[ConfigSeenAnnotationKey] != "earlier" {
					t.Errorf("seen = %q", p.Annotations[ConfigSeenAnnotationKey])
				}
				if len(p.Spec.Tolerations) != 1 {
					t.Errorf("tolerations = %+v", p.Spec.Tolerations)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p := minimalPod()
			if tc.mutate != nil {
				tc.mutate(p)
			}
			if err := ApplyStaticPodDefaults(p, tc.source, tc.node); err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

func TestStaticPodUIDStability(t *testing.T) {
	uid := func(mutate func(*v1.Pod), src Source, node string) string {
		p := minimalPod()
		if mutate != nil {
			mutate(p)
		}
		SetDefaults_Pod(p)
		if err := ApplyStaticPodDefaults(p, src, node); err != nil {
			t.Fatal(err)
		}
		return string(p.UID)
	}
	a := Source{Kind: SourceFile, Location: "/m/a.yaml"}
	base := uid(nil, a, "n1")
	tests := []struct {
		desc     string
		got      string
		wantSame bool
	}{
		{desc: "same content, path and node", got: uid(nil, a, "n1"), wantSame: true},
		{desc: "defaults written out explicitly", got: uid(func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyAlways }, a, "n1"), wantSame: true},
		{desc: "changed image", got: uid(func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx:1.28" }, a, "n1"), wantSame: false},
		{desc: "other path", got: uid(nil, Source{Kind: SourceFile, Location: "/m/b.yaml"}, "n1"), wantSame: false},
		{desc: "other node", got: uid(nil, a, "n2"), wantSame: false},
		{desc: "url source", got: uid(nil, Source{Kind: SourceHTTP, Location: "/m/a.yaml"}, "n1"), wantSame: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if same := tc.got == base; same != tc.wantSame {
				t.Errorf("uid %s vs base %s: same = %v, want %v", tc.got, base, same, tc.wantSame)
			}
		})
	}
}

func TestIsCriticalPod(t *testing.T) {
	prio := func(p int32) *int32 { return &p }
	for _, tc := range []struct {
		desc               string
		pod                v1.Pod
		wantCritical, node bool
	}{
		{desc: "an API pod", pod: v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ConfigSourceAnnotationKey: "api"}}}},
		{desc: "no source", pod: v1.Pod{}},
		{desc: "a static pod", pod: v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ConfigSourceAnnotationKey: "file"}}}, wantCritical: true},
		{desc: "a mirror pod", pod: v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ConfigMirrorAnnotationKey: "x"}}}, wantCritical: true},
		{desc: "system-cluster-critical", pod: v1.Pod{Spec: v1.PodSpec{Priority: prio(SystemCriticalPriority), PriorityClassName: "system-cluster-critical"}}, wantCritical: true},
		{desc: "system-node-critical", pod: v1.Pod{Spec: v1.PodSpec{Priority: prio(SystemCriticalPriority + 1000), PriorityClassName: "system-node-critical"}}, wantCritical: true, node: true},
		{desc: "named node-critical without the priority", pod: v1.Pod{Spec: v1.PodSpec{Priority: prio(10), PriorityClassName: "system-node-critical"}}},
		{desc: "just below critical", pod: v1.Pod{Spec: v1.PodSpec{Priority: prio(SystemCriticalPriority - 1)}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := IsCriticalPod(&tc.pod); got != tc.wantCritical {
				t.Errorf("IsCriticalPod = %v, want %v", got, tc.wantCritical)
			}
			if got := IsNodeCriticalPod(&tc.pod); got != tc.node {
				t.Errorf("IsNodeCriticalPod = %v, want %v", got, tc.node)
			}
		})
	}
}
