package server

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCallLogging(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	path := filepath.Join(socketDir(t), "gw.sock")
	srv, err := New(Config{SocketPath: path}, newTestRuntime(), WithLogger(zap.New(core)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := runtimeapi.NewRuntimeServiceClient(conn)
	client.Version(ctx, &runtimeapi.VersionRequest{})
	client.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "x"})

	tests := []struct {
		desc     string
		message  string
		method   string
		level    zapcore.Level
		wantCode string // "" = no code field expected
	}{
		{desc: "success logged at debug with its code", message: "CRI call", method: "Version", level: zapcore.DebugLevel, wantCode: "OK"},
		{desc: "error logged at warn with its code", message: "CRI call", method: "ContainerStatus", level: zapcore.WarnLevel, wantCode: "NotFound"},
		{desc: "the backend's logger names the method", message: "backend saw Version", method: "Version", level: zapcore.InfoLevel},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			entries := logs.FilterMessage(tc.message).FilterField(zap.String("method", tc.method)).All()
			if len(entries) != 1 {
				t.Fatalf("%d %q entries for %s, want 1 (all: %v)", len(entries), tc.message, tc.method, logs.All())
			}
			e := entries[0]
			if e.Level != tc.level {
				t.Errorf("level = %v, want %v", e.Level, tc.level)
			}
			fields := e.ContextMap()
			if tc.wantCode != "" {
				if fields["code"] != tc.wantCode {
					t.Errorf("code field = %v, want %s", fields["code"], tc.wantCode)
				}
				if _, ok := fields["duration"]; !ok {
					t.Error("no duration field")
				}
			}
		})
	}
}
