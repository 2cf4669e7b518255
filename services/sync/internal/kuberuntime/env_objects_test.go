package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/events"
)

// fakeObjects is a hand-written ObjectGetter over fixed objects, keyed by
// "namespace/name".
type fakeObjects struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	services   []*v1.Service
	// servicesErr is what ListServices fails with, when set.
	servicesErr error
	// gets counts GetConfigMap and GetSecret calls.
	gets int
	// tokenRequests are the token requests made; tokenErr fails them.
	tokenRequests []*authenticationv1.TokenRequest
	tokenErr      error
	// tokenGeneration is appended to the tokens issued: a test bumps it
	// to stand for the refresh the token manager makes at 80% of a
	// token's lifetime.
	tokenGeneration int
}

var _ ObjectGetter = (*fakeObjects)(nil)

func (f *fakeObjects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.gets++
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, notFound(fmt.Sprintf("configmap %q not found", name))
}

func (f *fakeObjects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.gets++
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, notFound(fmt.Sprintf("secret %q not found", name))
}

func (f *fakeObjects) ListServices(_ context.Context, ns string) ([]*v1.Service, error) {
	if f.servicesErr != nil {
		return nil, f.servicesErr
	}
	var out []*v1.Service
	for _, s := range f.services {
		if s.Namespace == ns {
			out = append(out, s)
		}
	}
	return out, nil
}

func (f *fakeObjects) GetServiceAccountToken(_ context.Context, ns, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.tokenRequests = append(f.tokenRequests, req)
	if f.tokenErr != nil {
		return nil, f.tokenErr
	}
	out := req.DeepCopy()
	out.Status.Token = fmt.Sprintf("token-%s-%s-%v", ns, name, req.Spec.Audiences)
	if f.tokenGeneration > 0 {
		out.Status.Token += fmt.Sprintf("-gen%d", f.tokenGeneration)
	}
	return out, nil
}

// notFound is an API server NotFound as ObjectGetter returns it: the
// kubelet's message, matching errdefs.ErrNotFound.
type notFound string

func (e notFound) Error() string        { return string(e) }
func (e notFound) Is(target error) bool { return target == errdefs.ErrNotFound }

func testObjects() *fakeObjects {
	return &fakeObjects{
		configMaps: map[string]*v1.ConfigMap{
			"default/cfg":   {Data: map[string]string{"B": "b", "A": "a", "LEVEL": "debug"}},
			"default/weird": {Data: map[string]string{"ok": "1", "": "empty"}},
		},
		secrets: map[string]*v1.Secret{
			"default/creds": {Data: map[string][]byte{"USER": []byte("admin"), "PASS": []byte("s3cret")}},
		},
		services: []*v1.Service{
			{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
				Spec:       v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}}},
			},
		},
	}
}

func cmKeyEnv(name, cm, key string, optional *bool) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: cm}, Key: key, Optional: optional}}}
}

func secretKeyEnv(name, secret, key string, optional *bool) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: secret}, Key: key, Optional: optional}}}
}

// kubernetesServiceEnv is what the "kubernetes" service of testObjects
// gives every pod.
var kubernetesServiceEnv = []EnvVar{
	{"KUBERNETES_PORT", "tcp://10.96.0.1:443"},
	{"KUBERNETES_PORT_443_TCP", "tcp://10.96.0.1:443"},
	{"KUBERNETES_PORT_443_TCP_ADDR", "10.96.0.1"},
	{"KUBERNETES_PORT_443_TCP_PORT", "443"},
	{"KUBERNETES_PORT_443_TCP_PROTO", "tcp"},
	{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
	{"KUBERNETES_SERVICE_PORT", "443"},
	{"KUBERNETES_SERVICE_PORT_HTTPS", "443"},
}

func TestMakeEnvironmentVariablesFromAPI(t *testing.T) {
	cases := []struct {
		desc       string
		env        []v1.EnvVar
		envFrom    []v1.EnvFromSource
		want       []EnvVar
		wantEvents []string
	}{
		{
			desc: "envFrom configMap then secret with prefix, keys sorted per source",
			envFrom: []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
				{Prefix: "DB_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
			},
			want: append([]EnvVar{{"A", "a"}, {"B", "b"}, {"LEVEL", "debug"}, {"DB_PASS", "s3cret"}, {"DB_USER", "admin"}}, kubernetesServiceEnv...),
		},
		{
			desc:    "env replaces envFrom and expands against it and the service variables",
			envFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
			env: []v1.EnvVar{
				{Name: "LEVEL", Value: "info-$(A)"},
				{Name: "API", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
			},
			want: append([]EnvVar{{"A", "a"}, {"B", "b"}, {"LEVEL", "info-a"}, {"API", "https://10.96.0.1:443"}}, kubernetesServiceEnv...),
		},
		{
			desc: "missing optional sources are skipped",
			envFrom: []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: new(true)}},
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: new(true)}},
			},
			env: []v1.EnvVar{
				cmKeyEnv("X", "nope", "k", new(true)),
				cmKeyEnv("Y", "cfg", "nokey", new(true)),
				secretKeyEnv("Z", "nope", "k", new(true)),
				secretKeyEnv("W", "creds", "nokey", new(true)),
				{Name: "KEPT", Value: "yes"},
			},
			want: append([]EnvVar{{"KEPT", "yes"}}, kubernetesServiceEnv...),
		},
		{
			desc: "key references",
			env:  []v1.EnvVar{cmKeyEnv("LOG", "cfg", "LEVEL", nil), secretKeyEnv("PW", "creds", "PASS", new(false))},
			want: append([]EnvVar{{"LOG", "debug"}, {"PW", "s3cret"}}, kubernetesServiceEnv...),
		},
		{
			desc: "a declared variable hides a service variable",
			env:  []v1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "example"}},
			want: append([]EnvVar{{"KUBERNETES_SERVICE_HOST", "example"}}, append(append([]EnvVar{}, kubernetesServiceEnv[:5]...), kubernetesServiceEnv[6:]...)...),
		},
		{
			desc:       "a key that cannot name a variable is skipped with an event",
			envFrom:    []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "weird"}}}},
			want:       append([]EnvVar{{"ok", "1"}}, kubernetesServiceEnv...),
			wantEvents: []string{"Warning InvalidEnvironmentVariableNames Keys [] from the EnvFrom configMap default/weird were skipped since they are considered invalid environment variable names."},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := envPod()
			c := &pod.Spec.Containers[1]
			c.Env, c.EnvFrom = tc.env, tc.envFrom
			rec := &events.FakeRecorder{}
			got, err := makeEnvironmentVariables(t.Context(), pod, c, nil, nil, EnvOptions{Objects: testObjects(), recorder: rec})
			if err != nil {
				t.Fatalf("makeEnvironmentVariables: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if got := rec.Events(); !reflect.DeepEqual(got, tc.wantEvents) {
				t.Errorf("events %q, want %q", got, tc.wantEvents)
			}
		})
	}
}

func TestMakeEnvironmentVariablesFromAPIRejects(t *testing.T) {
	cases := []struct {
		desc        string
		env         []v1.EnvVar
		envFrom     []v1.EnvFromSource
		servicesErr error
		source      string
		wantIs      error
		wantMsg     string
	}{
		{
			desc:    "missing configMap",
			envFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}},
			wantIs:  errdefs.ErrNotFound, wantMsg: `configmap "nope" not found`,
		},
		{
			desc:   "missing secret, optional false",
			env:    []v1.EnvVar{secretKeyEnv("S", "nope", "k", new(false))},
			wantIs: errdefs.ErrNotFound, wantMsg: `secret "nope" not found`,
		},
		{
			desc:   "missing configMap key",
			env:    []v1.EnvVar{cmKeyEnv("C", "cfg", "nokey", nil)},
			wantIs: errdefs.ErrNotFound, wantMsg: "couldn't find key nokey in ConfigMap default/cfg",
		},
		{
			desc:   "missing secret key",
			env:    []v1.EnvVar{secretKeyEnv("S", "creds", "nokey", nil)},
			wantIs: errdefs.ErrNotFound, wantMsg: "couldn't find key nokey in Secret default/creds",
		},
		{
			desc:        "services not read yet, pod from the API server",
			servicesErr: errdefs.ErrUnavailable,
			source:      apiserverSource,
			wantIs:      errdefs.ErrUnavailable, wantMsg: "services have not yet been read at least once",
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := envPod()
			pod.Annotations[defaults.ConfigSourceAnnotationKey] = tc.source
			c := &pod.Spec.Containers[1]
			c.Env, c.EnvFrom = tc.env, tc.envFrom
			objs := testObjects()
			objs.servicesErr = tc.servicesErr
			_, err := makeEnvironmentVariables(t.Context(), pod, c, nil, nil, EnvOptions{Objects: objs})
			if !errors.Is(err, tc.wantIs) {
				t.Fatalf("error %v is not %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
		})
	}
}

func TestMakeEnvironmentVariablesReadsEachObjectOnce(t *testing.T) {
	pod := envPod()
	c := &pod.Spec.Containers[1]
	c.EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}
	c.Env = []v1.EnvVar{cmKeyEnv("X", "cfg", "A", nil), cmKeyEnv("Y", "cfg", "B", nil), secretKeyEnv("U", "creds", "USER", nil), secretKeyEnv("P", "creds", "PASS", nil)}
	objs := testObjects()
	if _, err := makeEnvironmentVariables(t.Context(), pod, c, nil, nil, EnvOptions{Objects: objs}); err != nil {
		t.Fatal(err)
	}
	if objs.gets != 2 {
		t.Errorf("%d object reads, want 2", objs.gets)
	}
}

func TestGetServiceEnvVarMap(t *testing.T) {
	svc := func(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
	}
	services := []*v1.Service{
		svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443}),
		svc("default", "other", "10.96.0.2", v1.ServicePort{Port: 80}),
		svc("app", "my-db", "10.96.0.3", v1.ServicePort{Port: 5432}, v1.ServicePort{Name: "metrics", Port: 9187, Protocol: v1.ProtocolUDP}),
		svc("app", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
	}
	cases := []struct {
		desc      string
		namespace string
		links     *bool
		getter    ObjectGetter
		source    string
		want      map[string]string
	}{
		{desc: "no API server", namespace: "app", want: map[string]string{}},
		{
			desc: "services not read yet, static pod", namespace: "app",
			getter: &fakeObjects{servicesErr: errdefs.ErrUnavailable}, source: "file",
			want: map[string]string{},
		},
		{
			desc: "links off: only the master service", namespace: "app", links: new(false),
			getter: &fakeObjects{services: services},
			want: map[string]string{
				"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
				"KUBERNETES_PORT": "tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
				"KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
			},
		},
		{
			desc: "links on: the namespace's services too, headless ones left out", namespace: "app",
			getter: &fakeObjects{services: services[2:]},
			want: map[string]string{
				"MY_DB_SERVICE_HOST": "10.96.0.3", "MY_DB_SERVICE_PORT": "5432", "MY_DB_SERVICE_PORT_METRICS": "9187",
				"MY_DB_PORT":                "tcp://10.96.0.3:5432",
				"MY_DB_PORT_5432_TCP":       "tcp://10.96.0.3:5432",
				"MY_DB_PORT_5432_TCP_PROTO": "tcp",
				"MY_DB_PORT_5432_TCP_PORT":  "5432",
				"MY_DB_PORT_5432_TCP_ADDR":  "10.96.0.3",
				"MY_DB_PORT_9187_UDP":       "udp://10.96.0.3:9187",
				"MY_DB_PORT_9187_UDP_PROTO": "udp",
				"MY_DB_PORT_9187_UDP_PORT":  "9187",
				"MY_DB_PORT_9187_UDP_ADDR":  "10.96.0.3",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := envPod()
			pod.Namespace = tc.namespace
			pod.Spec.EnableServiceLinks = tc.links
			pod.Annotations[defaults.ConfigSourceAnnotationKey] = tc.source
			got, err := getServiceEnvVarMap(t.Context(), pod, tc.getter)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}
