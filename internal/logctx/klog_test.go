package logctx

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/klog/v2"
)

func TestRouteKlog(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	RouteKlog(zap.New(core))
	defer klog.ClearLogger()
	klog.InfoS("from a library", "key", "value")
	klog.Flush()
	entries := logs.FilterMessage("from a library").All()
	if len(entries) != 1 || entries[0].LoggerName != "klog" || entries[0].ContextMap()["key"] != "value" {
		t.Fatalf("klog line reached zap as %+v, want one entry from logger klog with key=value", entries)
	}
}
