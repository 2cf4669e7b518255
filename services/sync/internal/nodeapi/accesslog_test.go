package nodeapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLogRequest(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		level   zapcore.Level
		handler http.HandlerFunc
		// wantStatus is the status logged; 0 wants a hijacked stream, -1 no line.
		wantStatus int
	}{
		{desc: "a status written", level: zap.DebugLevel, wantStatus: http.StatusNotFound,
			handler: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusNotFound) }},
		{desc: "a body without a status is 200", level: zap.DebugLevel, wantStatus: http.StatusOK,
			handler: func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }},
		{desc: "nothing written is 200", level: zap.DebugLevel, wantStatus: http.StatusOK,
			handler: func(w http.ResponseWriter, r *http.Request) {}},
		{desc: "a hijacked stream", level: zap.DebugLevel, wantStatus: 0,
			handler: func(w http.ResponseWriter, r *http.Request) {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Errorf("hijack through the recording writer: %v", err)
					return
				}
				_, _ = conn.Write([]byte("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n"))
				conn.Close()
			}},
		{desc: "flushes reach the connection", level: zap.DebugLevel, wantStatus: http.StatusOK,
			handler: func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte("line\n"))
				if err := http.NewResponseController(w).Flush(); err != nil {
					t.Errorf("flush through the recording writer: %v", err)
				}
			}},
		{desc: "off above debug", level: zap.InfoLevel, wantStatus: -1,
			handler: func(w http.ResponseWriter, r *http.Request) {
				if _, ok := w.(*recordingWriter); ok {
					t.Error("the writer is wrapped with the access log off")
				}
			}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			core, logs := observer.New(tc.level)
			log := zap.New(core)
			// logged is closed once logRequest has returned. The
			// server's Close does not wait for it: a hijacked
			// connection is no longer the server's to track.
			logged := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(logged)
				logRequest(log, tc.handler, w, r)
			}))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/containerLogs/ns/pod/c?follow=true")
			if err == nil {
				resp.Body.Close()
			}
			select {
			case <-logged:
			case <-time.After(10 * time.Second):
				t.Fatal("the handler did not return within 10s")
			}
			entries := logs.FilterMessage("HTTP").All()
			if tc.wantStatus == -1 {
				if len(entries) != 0 {
					t.Fatalf("logged %d lines, want none", len(entries))
				}
				return
			}
			if len(entries) != 1 {
				t.Fatalf("logged %d lines, want 1", len(entries))
			}
			f := entries[0].ContextMap()
			if f["uri"] != "/containerLogs/ns/pod/c?follow=true" {
				t.Errorf("uri %v", f["uri"])
			}
			if tc.wantStatus == 0 {
				if f["hijacked"] != true || f["status"] != nil {
					t.Errorf("fields %v, want hijacked and no status", f)
				}
			} else if f["status"] != int64(tc.wantStatus) {
				t.Errorf("status %v, want %d", f["status"], tc.wantStatus)
			}
		})
	}
}
