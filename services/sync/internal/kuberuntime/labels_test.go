package kuberuntime

import (
	"context"
	"reflect"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
)

func TestPodSandboxLabelsRoundTrip(t *testing.T) {
	pod := makeTestPod()
	pod.Labels = map[string]string{"app": "web", "tier": "front"}
	info := getPodSandboxInfoFromLabels(newPodLabels(pod))
	if info.PodName != "web" || info.PodNamespace != "default" || info.PodUID != "uid-1" {
		t.Errorf("identity read back as %+v", info)
	}
	if !reflect.DeepEqual(info.Labels, pod.Labels) {
		t.Errorf("pod labels read back as %v, want %v", info.Labels, pod.Labels)
	}
	if _, ok := pod.Labels[KubernetesPodNameLabel]; ok {
		t.Error("newPodLabels wrote into the pod's own labels")
	}
}

func TestNewPodLabelsOverrideSpoofing(t *testing.T) {
	// A pod label cannot claim another pod's identity: ours are written last.
	pod := makeTestPod()
	pod.Labels = map[string]string{KubernetesPodUIDLabel: "someone-else"}
	if got := newPodLabels(pod)[KubernetesPodUIDLabel]; got != "uid-1" {
		t.Errorf("uid label = %q, want uid-1", got)
	}
}

func TestGetContainerInfoFromAnnotations(t *testing.T) {
	cases := []struct {
		desc        string
		annotations map[string]string
		want        *AnnotatedContainerInfo
		wantErrLogs int
	}{
		{
			desc: "missing annotations read as zero values",
			want: &AnnotatedContainerInfo{},
		},
		{
			desc: "well formed",
			annotations: map[string]string{
				ContainerHashLabel:             "8e45cbd0",
				ContainerRestartCountLabel:     "7",
				PodTerminationGracePeriodLabel: "30",
				ContainerTypeLabel:             ContainerTypeEphemeral,
				ContainerPreStopHandlerLabel:   `{"sleep":{"seconds":5}}`,
				ContainerPortsLabel:            `[{"containerPort":80,"protocol":"TCP"}]`,
			},
			want: &AnnotatedContainerInfo{
				Hash: 0x8e45cbd0, RestartCount: 7, PodTerminationGracePeriod: new(int64(30)), ContainerType: ContainerTypeEphemeral,
				PreStopHandler: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}},
				ContainerPorts: []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}},
			},
		},
		{
			desc: "malformed values are logged and zeroed",
			annotations: map[string]string{
				ContainerHashLabel:           "not-hex",
				ContainerRestartCountLabel:   "many",
				PodDeletionGracePeriodLabel:  "soon",
				ContainerPreStopHandlerLabel: "{",
				ContainerPortsLabel:          "[",
			},
			want:        &AnnotatedContainerInfo{},
			wantErrLogs: 5,
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			core, logs := observer.New(zapcore.ErrorLevel)
			ctx := logctx.With(context.Background(), zap.New(core))
			got := getContainerInfoFromAnnotations(ctx, tc.annotations)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if logs.Len() != tc.wantErrLogs {
				t.Errorf("%d error logs, want %d: %v", logs.Len(), tc.wantErrLogs, logs.All())
			}
		})
	}
}

func TestContainerTypeOf(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.InitContainers = []v1.Container{{Name: "init"}}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	cases := []struct {
		desc, name, want string
	}{
		{desc: "init", name: "init", want: ContainerTypeInit},
		{desc: "regular", name: "foo1", want: ContainerTypeRegular},
		{desc: "ephemeral", name: "debug", want: ContainerTypeEphemeral},
		{desc: "unknown gets no annotation", name: "ghost", want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := containerTypeOf(pod, tc.name); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
