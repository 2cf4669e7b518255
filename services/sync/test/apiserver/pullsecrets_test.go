package apiserver_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// registryEnv names the distribution/distribution registry binary
// (hack/lib/registry.sh builds it).
const registryEnv = "SPLITLET_REGISTRY_BIN"

// A private registry that wants a login: a pod without a pull secret is
// refused, a pod whose service account carries the secret (copied into the
// pod by the ServiceAccount admission plugin) pulls and runs, and once the
// image is on the node a pod without the secret still cannot use it (it
// must pull, and is refused: KubeletEnsureSecretPulledImages).
func TestPullSecretsWithAPrivateRegistry(t *testing.T) {
	endpoint, registryBin := os.Getenv(containerdEnv), os.Getenv(registryEnv)
	if endpoint == "" || registryBin == "" {
		t.Skipf("needs %s (a containerd with the busybox image) and %s (a registry binary): hack/apiserver-e2e.sh sets both", containerdEnv, registryEnv)
	}
	source := busyboxImage()
	const user, password = "alice", "wonderland"
	addr := startRegistry(t, registryBin, user, password)
	image := addr + "/private/busybox:1.36"
	pushToRegistry(t, strings.TrimPrefix(endpoint, "unix://"), source, image, user+":"+password)

	client, _, node := nodeStackOn(t, endpoint)
	ctx := t.Context()
	ns := "default"
	suffix := node[len("splitlet-it-"):]
	secret := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred-" + suffix, Namespace: ns},
		Type:       v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths": {%q: {"auth": %q}}}`,
			addr, base64.StdEncoding.EncodeToString([]byte(user+":"+password)))},
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &v1.ServiceAccount{
		ObjectMeta:       metav1.ObjectMeta{Name: "puller-" + suffix, Namespace: ns},
		ImagePullSecrets: []v1.LocalObjectReference{{Name: secret.Name}},
	}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	newPod := func(name, serviceAccount string) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + suffix, Namespace: ns},
			Spec: v1.PodSpec{
				NodeName:                     node,
				HostNetwork:                  true,
				ServiceAccountName:           serviceAccount,
				AutomountServiceAccountToken: new(false),
				Tolerations:                  []v1.Toleration{{Key: "splitlet.dev/agent", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
				Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: v1.PullIfNotPresent,
					Command: []string{"sleep", "3600"}}},
			},
		}
	}
	create := func(pod *v1.Pod) {
		t.Helper()
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = client.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		})
	}

	anonymous := newPod("anonymous", "")
	create(anonymous)
	waitPullRefused(t, client, ns, anonymous.Name)

	withSecret := newPod("with-secret", sa.Name)
	create(withSecret)
	got, err := client.CoreV1().Pods(ns).Get(ctx, withSecret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.ImagePullSecrets) != 1 || got.Spec.ImagePullSecrets[0].Name != secret.Name {
		t.Fatalf("the ServiceAccount plugin gave the pod imagePullSecrets %v, want [%s]", got.Spec.ImagePullSecrets, secret.Name)
	}
	waitFor(t, 2*time.Minute, "the pod with the pull secret to run", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, withSecret.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				return true, ""
			}
		}
		return false, fmt.Sprintf("phase %s, statuses %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})

	// The image is on the node now; another pod without the login must
	// still be refused.
	late := newPod("late-anonymous", "")
	create(late)
	waitPullRefused(t, client, ns, late.Name)
}

// waitPullRefused waits until the pod's container waits in ErrImagePull or
// ImagePullBackOff because the registry refused the pull. The runtime's
// words for that differ: containerd 1.6 passes on the registry's "401
// Unauthorized", 2.x says "pull access denied, repository does not exist or
// may require authorization: authorization failed: no basic auth
// credentials".
func waitPullRefused(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	waitFor(t, 2*time.Minute, name+"'s pull to be refused", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				t.Fatalf("%s runs the private image without credentials", name)
			}
			w := cs.State.Waiting
			if w == nil || (w.Reason != "ErrImagePull" && w.Reason != "ImagePullBackOff") {
				continue
			}
			if msg := strings.ToLower(w.Message); strings.Contains(msg, "unauthorized") || strings.Contains(msg, "authorization failed") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("statuses %+v", p.Status.ContainerStatuses)
	})
}

// startRegistry runs the registry on a free loopback port with one
// htpasswd login, and returns its address as images name it
// ("localhost:PORT": containerd speaks plain HTTP to localhost).
func startRegistry(t *testing.T, bin, user, password string) string {
	t.Helper()
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), fmt.Appendf(nil, "%s:%s\n", user, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: 127.0.0.1:%d
auth:
  htpasswd:
    realm: splitlet-test
    path: %s
`, filepath.Join(dir, "data"), port, filepath.Join(dir, "htpasswd"))
	configPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", configPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("registry log:\n%s", b)
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/v2/", port)
	waitFor(t, 30*time.Second, "the registry to ask for a login", func() (bool, string) {
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized, resp.Status
	})
	return fmt.Sprintf("localhost:%d", port)
}

// pushToRegistry copies the source image, already in containerd, to image
// in the registry with ctr, then drops image's name from containerd so that
// running it means pulling it.
func pushToRegistry(t *testing.T, sock, source, image, login string) {
	t.Helper()
	ctr := func(args ...string) {
		t.Helper()
		out, err := exec.Command("ctr", append([]string{"--address", sock, "-n", "k8s.io"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ctr("images", "tag", "--force", source, image)
	ctr("images", "push", "--plain-http", "--user", login, image)
	ctr("images", "rm", image)
}
