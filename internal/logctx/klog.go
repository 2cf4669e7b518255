package logctx

import (
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"k8s.io/klog/v2"
)

// RouteKlog sends what the Kubernetes libraries log through klog
// (client-go, the CRI streaming server, the apiserver's authenticators)
// to l, named "klog", so a process writes one format; klog would
// otherwise write its own lines to stderr. klog's verbosity levels map
// to debug.
func RouteKlog(l *zap.Logger) {
	klog.SetLogger(zapr.NewLogger(l.Named("klog")))
}
