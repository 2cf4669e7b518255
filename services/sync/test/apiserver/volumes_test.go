package apiserver_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// A pod from the API server, admitted with the ServiceAccount plugin on,
// runs with what it references: a configMap volume (updated in place when
// the configMap changes), a secret in its env, and the kube-api-access
// projected volume the plugin adds (a TokenRequest token, ca.crt, the
// namespace).
func TestVolumesAndEnvFromTheAPIServer(t *testing.T) {
	client, s, node := nodeStack(t)
	ctx := t.Context()
	ns := "default"
	suffix := node[len("splitlet-it-"):]
	cmName, secretName, podName := "app-config-"+suffix, "app-secret-"+suffix, "volumes-"+suffix
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: ns}, Data: map[string]string{"greeting": "hello"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns}, StringData: map[string]string{"password": "s3cret"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		zero := int64(0)
		_ = client.CoreV1().Pods(ns).Delete(bg, podName, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		_ = client.CoreV1().ConfigMaps(ns).Delete(bg, cmName, metav1.DeleteOptions{})
		_ = client.CoreV1().Secrets(ns).Delete(bg, secretName, metav1.DeleteOptions{})
	})
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:    node,
			Tolerations: []v1.Toleration{{Key: "splitlet.dev/agent", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			Volumes: []v1.Volume{{Name: "config", VolumeSource: v1.VolumeSource{
				ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cmName}}}}},
			Containers: []v1.Container{{
				Name: "app", Image: "busybox:1.36",
				VolumeMounts: []v1.VolumeMount{{Name: "config", MountPath: "/etc/config"}},
				Env: []v1.EnvVar{
					{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
						LocalObjectReference: v1.LocalObjectReference{Name: secretName}, Key: "password"}}},
					// The fake container prints what sync expanded, one
					// line per "|".
					{Name: "SPLITLET_FAKE_BEHAVIOR", Value: `stdout="pw=$(PASSWORD)|api=$(KUBERNETES_SERVICE_HOST)"`},
				},
			}},
		},
	}
	created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hasAPIAccess := false
	for _, vol := range created.Spec.Volumes {
		hasAPIAccess = hasAPIAccess || strings.HasPrefix(vol.Name, "kube-api-access-")
	}
	if !hasAPIAccess {
		t.Fatalf("the ServiceAccount admission plugin added no kube-api-access volume: %+v", created.Spec.Volumes)
	}
	waitFor(t, 60*time.Second, "pod Running", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodRunning, string(p.Status.Phase) + " " + p.Status.Message
	})

	podDir := filepath.Join(s.StateDir, "pods", string(created.UID))
	greeting := func() string { return readVolumeFile(podDir, "greeting") }
	if got := greeting(); got != "hello" {
		t.Errorf("configMap file greeting = %q, want hello", got)
	}
	if token := readVolumeFile(podDir, "token"); strings.Count(token, ".") != 2 {
		t.Errorf("projected token = %q, want a JWT from TokenRequest", token)
	}
	if got := readVolumeFile(podDir, "namespace"); got != ns {
		t.Errorf("projected namespace = %q, want %q", got, ns)
	}

	pods := s.PodService()
	waitFor(t, 10*time.Second, "the secret and the API server's address in the container's env", func() (bool, string) {
		logs, err := pods.Logs(ctx, connect.NewRequest(&podv1.LogsRequest{Namespace: ns, Name: podName}))
		if err != nil {
			return false, err.Error()
		}
		var out strings.Builder
		for logs.Receive() {
			out.Write(logs.Msg().GetData())
		}
		got := out.String()
		return strings.Contains(got, "pw=s3cret\n") && strings.Contains(got, "api=10.") && !strings.Contains(got, "$("), got
	})

	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, cmName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["greeting"] = "hi"
	if _, err := client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "the edited configMap in the running pod's volume", func() (bool, string) {
		got := greeting()
		return got == "hi", got
	})
}

// readVolumeFile finds the file called name under a pod's volume
// directory (through the atomic writer's ..data link) and returns its
// content, or "" when there is none.
func readVolumeFile(podDir, name string) string {
	var found string
	_ = filepath.WalkDir(filepath.Join(podDir, "volumes"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != name || strings.Contains(path, "..") {
			return nil
		}
		data, rerr := os.ReadFile(path)
		if rerr == nil {
			found = string(data)
			return fs.SkipAll
		}
		return nil
	})
	return found
}
