package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

func (s *stack) eventReasons(name string) string {
	s.t.Helper()
	stream, err := s.client.Events(context.Background(), connect.NewRequest(&podv1.EventsRequest{Namespace: "default", Name: name}))
	if err != nil {
		s.t.Fatalf("Events: %v", err)
	}
	var reasons []string
	for stream.Receive() {
		for _, ev := range stream.Msg().GetEvents() {
			reasons = append(reasons, ev.AsMap()["reason"].(string))
		}
	}
	return strings.Join(reasons, ",")
}

// A failing postStart hook kills the container (it is restarted) and a
// failing preStop hook is reported, as events, before the container stops.
func TestLifecycleHooks(t *testing.T) {
	s := startStack(t, stackOptions{backOffBase: 200 * time.Millisecond})
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: hooked
  annotations:
    fake.splitlet.dev/behavior.post: "exec-fail=always"
    fake.splitlet.dev/behavior.pre: "exec-fail=always"
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: post
    image: busybox:1.36
    lifecycle:
      postStart: {exec: {command: ["setup"]}}
  - name: pre
    image: busybox:1.36
    lifecycle:
      preStop: {exec: {command: ["drain"]}}
`)
	s.waitPod("hooked", 20*time.Second, "post restarted after its hook failed", func(p *v1.Pod) bool {
		cs := containerStatus(p, "post")
		return cs != nil && cs.RestartCount >= 1
	})
	if got := s.eventReasons("hooked"); !strings.Contains(got, "FailedPostStartHook") {
		t.Errorf("events %s lack FailedPostStartHook", got)
	}
	if _, err := s.client.Delete(context.Background(), connect.NewRequest(&podv1.DeleteRequest{Namespace: "default", Name: "hooked"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "FailedPreStopHook event", func() (bool, string) {
		got := s.eventReasons("hooked")
		return strings.Contains(got, "FailedPreStopHook"), got
	})
}
