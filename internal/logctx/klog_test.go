package logctx

import (
	"errors"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/klog/v2"
)

func TestRouteKlog(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	// As a process logger from zap.NewProductionConfig: stacks on errors.
	RouteKlog(zap.New(core, zap.AddStacktrace(zap.ErrorLevel)))
	defer klog.ClearLogger()
	klog.InfoS("from a library", "key", "value")
	klog.Flush()
	entries := logs.FilterMessage("from a library").All()
	if len(entries) != 1 || entries[0].LoggerName != "klog" || entries[0].ContextMap()["key"] != "value" {
		t.Fatalf("klog line reached zap as %+v, want one entry from logger klog with key=value", entries)
	}
	klog.ErrorS(errors.New("use of closed network connection"), "Error on socket receive")
	klog.Flush()
	entries = logs.FilterMessage("Error on socket receive").All()
	if len(entries) != 1 || entries[0].Level != zap.ErrorLevel || entries[0].Stack != "" {
		t.Fatalf("klog error reached zap as %+v, want one error entry without a stack trace", entries)
	}
}
