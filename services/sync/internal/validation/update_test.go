package validation

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidatePodUpdate(t *testing.T) {
	seconds := func(v int64) *int64 { return &v }
	tests := []struct {
		desc   string
		old    func(*v1.Pod)
		mutate func(*v1.Pod)
		want   []wantErr
		// wantMsg, when set, must appear in the error text.
		wantMsg string
	}{
		{desc: "no change", mutate: func(*v1.Pod) {}},
		{desc: "image change", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Image = "nginx:1.28"
			p.Spec.InitContainers[0].Image = "busybox:1.37"
		}},
		{desc: "labels and annotations may change", mutate: func(p *v1.Pod) { p.Labels["tier"] = "front" }},
		{desc: "toleration added", mutate: func(p *v1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: "k", Operator: v1.TolerationOpExists})
		}},
		{desc: "activeDeadlineSeconds set from nil", mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(60) }},
		{desc: "activeDeadlineSeconds lowered", old: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(60) }, mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(30) }},
		{
			desc:   "activeDeadlineSeconds raised",
			old:    func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(60) },
			mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(90) },
			want:   []wantErr{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds"}},
		},
		{
			desc:   "activeDeadlineSeconds removed",
			old:    func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = seconds(60) },
			mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			want:   []wantErr{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds"}},
		},
		{
			desc:   "toleration removed",
			old:    func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}} },
			mutate: func(p *v1.Pod) { p.Spec.Tolerations = nil },
			want:   []wantErr{{field.ErrorTypeForbidden, "spec.tolerations"}},
		},
		{
			desc: "container added",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, *p.Spec.Containers[1].DeepCopy())
				p.Spec.Containers[2].Name = "third"
			},
			want: []wantErr{{field.ErrorTypeForbidden, "spec.containers"}},
		},
		{desc: "cpu and memory resized", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("200m")
			p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("256Mi")
		}},
		{desc: "memory request added", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("64Mi")
		}},
		{
			desc:   "resize removing a limit",
			mutate: func(p *v1.Pod) { delete(p.Spec.Containers[0].Resources.Limits, v1.ResourceMemory) },
			want:   []wantErr{{field.ErrorTypeForbidden, "spec.containers[0].resources.limits"}},
		},
		{
			desc: "resize of another resource",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Limits[v1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
			},
			want: []wantErr{{field.ErrorTypeForbidden, "spec.containers[0].resources"}},
		},
		{
			desc: "resize changing the QoS class",
			mutate: func(p *v1.Pod) {
				for i := range p.Spec.Containers {
					p.Spec.Containers[i].Resources = v1.ResourceRequirements{}
				}
				p.Spec.Containers[0].Resources.Requests = nil
			},
			old: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests = nil
				p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
			},
			want: []wantErr{{field.ErrorTypeForbidden, "spec.containers[0].resources.limits"}, {field.ErrorTypeInvalid, "spec"}},
		},
		{
			desc:    "env change is forbidden and named",
			mutate:  func(p *v1.Pod) { p.Spec.Containers[0].Env[0].Value = "dev" },
			want:    []wantErr{{field.ErrorTypeForbidden, "spec"}},
			wantMsg: "changed: spec.containers",
		},
		{
			desc:    "restartPolicy change is forbidden",
			mutate:  func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever },
			want:    []wantErr{{field.ErrorTypeForbidden, "spec"}},
			wantMsg: "changed: spec.restartPolicy",
		},
		{
			desc: "terminationGracePeriodSeconds from negative to 1",
			old: func(p *v1.Pod) {
				p.Spec.TerminationGracePeriodSeconds = seconds(-1)
				p.Spec.Containers[0].Lifecycle = nil
			},
			mutate: func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = seconds(1) },
		},
		{
			desc:   "name change",
			mutate: func(p *v1.Pod) { p.Name = "other" },
			want:   []wantErr{{field.ErrorTypeInvalid, "metadata.name"}},
		},
		{
			desc:   "new pod invalid on its own",
			mutate: func(p *v1.Pod) { p.Spec.Containers[0].Image = "" },
			want:   []wantErr{{field.ErrorTypeRequired, "spec.containers[0].image"}, {field.ErrorTypeRequired, "spec.containers[0].image"}},
		},
		{
			desc: "mirror annotation added",
			mutate: func(p *v1.Pod) {
				p.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"}
				p.Spec.NodeName = "n"
			},
			want: []wantErr{
				{field.ErrorTypeForbidden, "metadata.annotations[kubernetes.io/config.mirror]"},
				{field.ErrorTypeForbidden, "spec"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			oldPod := validPod()
			if tc.old != nil {
				tc.old(oldPod)
			}
			newPod := oldPod.DeepCopy()
			tc.mutate(newPod)
			errs := ValidatePodUpdate(newPod, oldPod)
			got, want := errKeys(errs), wantKeys(tc.want)
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n got  %v\n want %v\n(%v)", got, want, errs)
			}
			if tc.wantMsg != "" && !strings.Contains(errs.ToAggregate().Error(), tc.wantMsg) {
				t.Errorf("%v does not contain %q", errs, tc.wantMsg)
			}
		})
	}
}
