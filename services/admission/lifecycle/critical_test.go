package lifecycle

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func critPod(annotations map[string]string, prio *int32) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}, Spec: v1.PodSpec{Priority: prio}}
}

func prio(p int32) *int32 { return &p }

func TestIsCriticalPod(t *testing.T) {
	tests := []struct {
		desc         string
		pod          *v1.Pod
		wantStatic   bool
		wantMirror   bool
		wantCritical bool
	}{
		{desc: "plain pod", pod: critPod(nil, nil)},
		{desc: "file source is static", pod: critPod(map[string]string{ConfigSourceAnnotationKey: "file"}, nil), wantStatic: true, wantCritical: true},
		{desc: "http source is static", pod: critPod(map[string]string{ConfigSourceAnnotationKey: "http"}, nil), wantStatic: true, wantCritical: true},
		{desc: "api source is not static", pod: critPod(map[string]string{ConfigSourceAnnotationKey: "api"}, nil)},
		{desc: "mirror pod", pod: critPod(map[string]string{ConfigMirrorAnnotationKey: ""}, nil), wantMirror: true, wantCritical: true},
		{desc: "system-cluster-critical priority", pod: critPod(nil, prio(2000000000)), wantCritical: true},
		{desc: "system-node-critical priority", pod: critPod(nil, prio(2000001000)), wantCritical: true},
		{desc: "highest user priority is not critical", pod: critPod(nil, prio(1000000000))},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := IsStaticPod(tc.pod); got != tc.wantStatic {
				t.Errorf("IsStaticPod = %v, want %v", got, tc.wantStatic)
			}
			if got := IsMirrorPod(tc.pod); got != tc.wantMirror {
				t.Errorf("IsMirrorPod = %v, want %v", got, tc.wantMirror)
			}
			if got := IsCriticalPod(tc.pod); got != tc.wantCritical {
				t.Errorf("IsCriticalPod = %v, want %v", got, tc.wantCritical)
			}
		})
	}
}

func TestPreemptable(t *testing.T) {
	static := map[string]string{ConfigSourceAnnotationKey: "file"}
	tests := []struct {
		desc      string
		preemptor *v1.Pod
		preemptee *v1.Pod
		want      bool
	}{
		{desc: "critical over non-critical", preemptor: critPod(static, nil), preemptee: critPod(nil, nil), want: true},
		{desc: "critical over critical without priorities", preemptor: critPod(static, nil), preemptee: critPod(static, nil)},
		{desc: "higher priority over lower", preemptor: critPod(nil, prio(10)), preemptee: critPod(nil, prio(5)), want: true},
		{desc: "equal priority", preemptor: critPod(nil, prio(10)), preemptee: critPod(nil, prio(10))},
		{desc: "non-critical without priority", preemptor: critPod(nil, nil), preemptee: critPod(nil, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := Preemptable(tc.preemptor, tc.preemptee); got != tc.want {
				t.Errorf("Preemptable = %v, want %v", got, tc.want)
			}
		})
	}
}
