package stack

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"

	"connectrpc.com/connect"

	"github.com/splitlet/splitlet/internal/apiauth"
	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// Sync's PodService and admission's AdmissionService refuse a caller
// without the token, on TCP and on unix sockets alike, and nothing the
// refused call asked for is started; with the token the same call works.
// On unix sockets sync reaches admission through admission's socket.
func TestAPIsRefuseCallersWithoutTheToken(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(dir string) Config
	}{
		{"tcp", func(string) Config { return Config{} }},
		{"unix", func(dir string) Config {
			return Config{SyncAddr: "unix://" + filepath.Join(dir, "sync.sock"), AdmissionAddr: "unix://" + filepath.Join(dir, "admission.sock")}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortDir(t)
			cfg := tc.cfg(dir)
			cfg.Dir = dir
			s := startStack(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: guarded, namespace: default}\n" +
				"spec:\n  containers: [{name: app, image: busybox:1.36}]\n"

			for _, token := range []string{"", "not-" + s.Token} {
				pods := podClient(t, apiauth.Dial{Endpoint: s.SyncURL(), Token: token})
				_, err := pods.Apply(ctx, connect.NewRequest(&podv1.ApplyRequest{Manifest: manifest}))
				if connect.CodeOf(err) != connect.CodeUnauthenticated {
					t.Errorf("Apply with token %q: %v, want unauthenticated", token, err)
				}
				hc, base, err := apiauth.Dial{Endpoint: s.AdmissionAddr, Token: token}.Client(true)
				if err != nil {
					t.Fatal(err)
				}
				_, err = admissionv1connect.NewAdmissionServiceClient(hc, base, connect.WithGRPC()).
					Admit(ctx, connect.NewRequest(&admissionv1.AdmitRequest{}))
				if connect.CodeOf(err) != connect.CodeUnauthenticated {
					t.Errorf("Admit with token %q: %v, want unauthenticated", token, err)
				}
			}
			list, err := s.PodService().List(ctx, connect.NewRequest(&podv1.ListRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(list.Msg.GetPods()); n != 0 {
				t.Fatalf("%d pods after refused applies, want 0", n)
			}
			if _, err := s.PodService().Apply(ctx, connect.NewRequest(&podv1.ApplyRequest{Manifest: manifest})); err != nil {
				t.Fatalf("Apply with the token: %v", err)
			}
			// sync asked admission, with its token, and was answered.
			WaitFor(t, 20*time.Second, "admission to admit the pod", func() (bool, string) {
				body, err := get(s.AdmissionDial(), "/metrics")
				if err != nil {
					return false, err.Error()
				}
				var admits []string
				for _, line := range strings.Split(body, "\n") {
					if strings.HasPrefix(line, "admission_admit_total") {
						admits = append(admits, line)
					}
				}
				return strings.Contains(body, `admission_admit_total{reason="",result="admitted"} 1`), fmt.Sprintf("admission's decisions: %q", admits)
			})
		})
	}
}

func podClient(t *testing.T, d apiauth.Dial) podv1connect.PodServiceClient {
	t.Helper()
	hc, base, err := d.Client(false)
	if err != nil {
		t.Fatal(err)
	}
	return podv1connect.NewPodServiceClient(hc, base)
}

func get(d apiauth.Dial, path string) (string, error) {
	hc, base, err := d.Client(false)
	if err != nil {
		return "", err
	}
	resp, err := hc.Get(base + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
