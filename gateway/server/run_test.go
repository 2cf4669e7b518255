package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"

	"github.com/splitlet/splitlet/gateway/backend"
)

func TestRun(t *testing.T) {
	rt := newTestRuntime()
	backends := Backends{
		"test": func(context.Context, Config, *zap.Logger) (backend.Runtime, error) { return rt, nil },
		"broken": func(context.Context, Config, *zap.Logger) (backend.Runtime, error) {
			return nil, errors.New("runtime socket missing")
		},
	}
	sock := filepath.Join(socketDir(t), "gw.sock")
	tests := []struct {
		desc    string
		backend string
		wantErr string
	}{
		{desc: "unknown backend names the choices", backend: "docker", wantErr: `unknown backend "docker" (want one of broken, test)`},
		{desc: "factory error is returned", backend: "broken", wantErr: "backend broken: runtime socket missing"},
		{desc: "serves until ctx is done, then closes the backend", backend: "test"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- Run(ctx, Config{SocketPath: sock, Backend: tc.backend}, backends) }()
			if tc.wantErr != "" {
				err := <-done
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run = %v, want an error containing %q", err, tc.wantErr)
				}
				if tc.backend == "docker" && !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Errorf("Run = %v, want it to wrap ErrInvalidArgument", err)
				}
				return
			}
			waitFor(t, func() bool { _, err := os.Stat(sock); return err == nil })
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run = %v, want nil", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after ctx was cancelled")
			}
			if !rt.called("Close") {
				t.Error("Run did not close the backend")
			}
		})
	}
}
