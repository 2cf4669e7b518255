package logctx

import (
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// RouteKlog sends what the Kubernetes libraries log through klog
// (client-go, the CRI streaming server, the apiserver's authenticators)
// to l, named "klog", so a process writes one format; klog would
// otherwise write its own lines to stderr. klog's verbosity levels map
// to debug. Its errors carry no stack trace, as klog's own lines do not:
// a process logger built by zap.NewProductionConfig adds one to every
// error, and the libraries' errors are routine (the streaming server logs
// one each time a websocket stream's client goes away).
func RouteKlog(l *zap.Logger) {
	klog.SetLogger(zapr.NewLogger(l.Named("klog").WithOptions(zap.AddStacktrace(zapcore.FatalLevel))))
}
