package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeClock is a settable clock for the TTL.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestObjectsGet(t *testing.T) {
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": "v1"}}
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"p": []byte("x")}}
	cases := []struct {
		desc    string
		get     func(o *Objects) (any, error)
		wantErr string
	}{
		{desc: "configMap", get: func(o *Objects) (any, error) { return o.GetConfigMap(t.Context(), "ns", "cfg") }},
		{desc: "secret", get: func(o *Objects) (any, error) { return o.GetSecret(t.Context(), "ns", "creds") }},
		{
			desc:    "missing configMap: the kubelet's message, and errdefs.ErrNotFound",
			get:     func(o *Objects) (any, error) { return o.GetConfigMap(t.Context(), "ns", "nope") },
			wantErr: `configmap "nope" not found`,
		},
		{
			desc:    "secret of another namespace",
			get:     func(o *Objects) (any, error) { return o.GetSecret(t.Context(), "other", "creds") },
			wantErr: `secret "creds" not found`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			o := NewObjects(fake.NewClientset(cm, secret), ObjectsOptions{})
			obj, err := tc.get(o)
			if tc.wantErr == "" {
				if err != nil || obj == nil {
					t.Fatalf("got %v, %v", obj, err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if !errors.Is(err, errdefs.ErrNotFound) || !apierrors.IsNotFound(err) {
				t.Errorf("error %v is not NotFound both ways", err)
			}
		})
	}
}

// TestObjectsWatch: an object is listed once, then its changes, deletion
// and creation arrive through its watch.
func TestObjectsWatch(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": "v1"}})
	var mu sync.Mutex
	lists := map[string]int{}
	client.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		lists[a.GetResource().Resource]++
		return false, nil, nil
	})
	o := NewObjects(client, ObjectsOptions{})
	t.Cleanup(o.stop)

	value := func() string {
		cm, err := o.GetConfigMap(ctx, "ns", "cfg")
		if err != nil {
			return err.Error()
		}
		return cm.Data["k"]
	}
	if got := value(); got != "v1" {
		t.Fatalf("got %q", got)
	}
	updated := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg"}, Data: map[string]string{"k": "v2"}}
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return value() == "v2" })
	if err := client.CoreV1().ConfigMaps("ns").Delete(ctx, "cfg", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return value() == `configmap "cfg" not found` })

	if _, err := o.GetSecret(ctx, "ns", "later"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("error %v, want not found", err)
	}
	if _, err := client.CoreV1().Secrets("ns").Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "later"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool {
		_, err := o.GetSecret(ctx, "ns", "later")
		return err == nil
	})
	mu.Lock()
	defer mu.Unlock()
	if lists["configmaps"] != 1 || lists["secrets"] != 1 {
		t.Errorf("lists %v, want one per object", lists)
	}
}

func TestObjectsWatchFailure(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1.Resource("secrets"), "s", errors.New("RBAC"))
	})
	o := NewObjects(client, ObjectsOptions{})
	t.Cleanup(o.stop)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := o.GetSecret(ctx, "ns", "s")
	if !errors.Is(err, errdefs.ErrUnavailable) || errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("error %v, want unavailable", err)
	}
}

func TestObjectsIdleWatchesStop(t *testing.T) {
	client := fake.NewClientset()
	clock := &fakeClock{t: time.Unix(1000, 0)}
	o := NewObjects(client, ObjectsOptions{IdleTimeout: time.Minute, Now: clock.Now})
	t.Cleanup(o.stop)
	_, _ = o.GetConfigMap(t.Context(), "ns", "a")
	clock.Step(30 * time.Second)
	_, _ = o.GetConfigMap(t.Context(), "ns", "b")
	clock.Step(31 * time.Second)
	_, _ = o.GetConfigMap(t.Context(), "ns", "b")
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.watches[objectKey{"configmap", "ns", "a"}]; ok || len(o.watches) != 1 {
		t.Errorf("watches %v: a was idle for over a minute", o.watches)
	}
}

func TestObjectsListServices(t *testing.T) {
	client := fake.NewClientset(
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1"}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.3"}},
	)
	o := NewObjects(client, ObjectsOptions{})
	if _, err := o.ListServices(t.Context(), "default"); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("before Run: error %v, want ErrUnavailable", err)
	}
	go o.Run(t.Context())
	var svcs []*v1.Service
	waitUntil(t, func() bool {
		var err error
		svcs, err = o.ListServices(t.Context(), "default")
		return err == nil
	})
	if len(svcs) != 1 || svcs[0].Name != "kubernetes" {
		t.Fatalf("services of default: %v", svcs)
	}
	svcs, err := o.ListServices(t.Context(), "app")
	if err != nil || len(svcs) != 1 || svcs[0].Name != "db" {
		t.Fatalf("services of app: %v, %v", svcs, err)
	}
}

// waitUntil polls cond until it holds, failing the test after 10 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatal("condition never held")
		}
	}
}

func TestObjectsServiceAccountToken(t *testing.T) {
	ctx := t.Context()
	clock := &fakeClock{t: time.Unix(1000, 0)}
	client := fake.NewClientset()
	issued := 0
	var fail bool
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		if fail {
			return true, nil, apierrors.NewServiceUnavailable("down")
		}
		issued++
		req := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		req.Status.Token = fmt.Sprintf("token-%d", issued)
		req.Status.ExpirationTimestamp = metav1.NewTime(clock.Now().Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second))
		return true, req, nil
	})
	o := NewObjects(client, ObjectsOptions{Now: clock.Now})
	req := func(aud string) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			Audiences: []string{aud}, ExpirationSeconds: new(int64(1000)),
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: "uid-1"},
		}}
	}
	steps := []struct {
		desc    string
		advance time.Duration
		aud     string
		fail    bool
		want    string
		wantErr bool
	}{
		{desc: "first request", want: "token-1"},
		{desc: "cached before 80% of its lifetime", advance: 799 * time.Second, want: "token-1"},
		{desc: "another audience is another token", aud: "other", want: "token-2"},
		{desc: "replaced after 80%", advance: 2 * time.Second, want: "token-3"},
		{desc: "a failed refresh serves the unexpired token", advance: 850 * time.Second, fail: true, want: "token-3"},
		{desc: "an expired token is not served", advance: 200 * time.Second, fail: true, wantErr: true},
		{desc: "the server back: a new token", want: "token-4"},
	}
	for _, s := range steps {
		clock.Step(s.advance)
		fail = s.fail
		aud := s.aud
		if aud == "" {
			aud = "api"
		}
		tr, err := o.GetServiceAccountToken(ctx, "ns", "default", req(aud))
		if s.wantErr {
			if err == nil {
				t.Fatalf("%s: got token %s, want an error", s.desc, tr.Status.Token)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.desc, err)
		}
		if tr.Status.Token != s.want {
			t.Fatalf("%s: token %s, want %s", s.desc, tr.Status.Token, s.want)
		}
	}
}

func TestObjectsListServicesForbidden(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(v1.Resource("services"), "", errors.New("RBAC"))
	})
	o := NewObjects(client, ObjectsOptions{})
	go o.Run(t.Context())
	// Not synced, but known to be refused: no services rather than a
	// wait that never ends.
	waitUntil(t, func() bool {
		svcs, err := o.ListServices(t.Context(), "default")
		return err == nil && len(svcs) == 0
	})
}
