package pluginhost

import (
	"fmt"
	"io"
	"log"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// hclogZap is an hclog.Logger writing to zap. go-plugin logs through hclog,
// both its own events and every line a plugin writes to stderr; this sends
// them to the admission service's zap logger instead of a second format on
// stderr.
type hclogZap struct {
	root    *zap.Logger // without name and implied fields, for ResetNamed
	z       *zap.Logger
	name    string
	implied []interface{}
	level   *atomic.Int32 // hclog.Level, shared by derived loggers as in hclog
}

var _ hclog.Logger = (*hclogZap)(nil)

func newHCLogger(z *zap.Logger) hclog.Logger {
	lvl := &atomic.Int32{}
	// hclog asks GetLevel to skip work (go-plugin skips parsing plugin
	// stderr when Off), so start from what zap would actually write.
	switch {
	case z.Core().Enabled(zapcore.DebugLevel):
		// zap has no trace level; trace goes out as debug.
		lvl.Store(int32(hclog.Trace))
	case z.Core().Enabled(zapcore.InfoLevel):
		lvl.Store(int32(hclog.Info))
	case z.Core().Enabled(zapcore.WarnLevel):
		lvl.Store(int32(hclog.Warn))
	default:
		lvl.Store(int32(hclog.Error))
	}
	return &hclogZap{root: z, z: z, level: lvl}
}

func (l *hclogZap) derive(name string, implied []interface{}) *hclogZap {
	z := l.root
	if name != "" {
		z = z.Named(name)
	}
	return &hclogZap{root: l.root, z: z.With(fields(implied)...), name: name, implied: implied, level: l.level}
}

// fields turns hclog's alternating keys and values into zap fields.
func fields(args []interface{}) []zap.Field {
	out := make([]zap.Field, 0, (len(args)+1)/2)
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			// hclog's own name for a dangling value.
			out = append(out, zap.Any("EXTRA_VALUE_AT_END", args[i]))
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		out = append(out, zap.Any(key, args[i+1]))
	}
	return out
}

func zapLevel(l hclog.Level) zapcore.Level {
	switch l {
	case hclog.Trace, hclog.Debug:
		return zapcore.DebugLevel
	case hclog.Warn:
		return zapcore.WarnLevel
	case hclog.Error:
		return zapcore.ErrorLevel
	default:
		return zapcore.InfoLevel
	}
}

func (l *hclogZap) Log(level hclog.Level, msg string, args ...interface{}) {
	if level == hclog.Off || (level != hclog.NoLevel && level < l.GetLevel()) {
		return
	}
	if ce := l.z.Check(zapLevel(level), msg); ce != nil {
		ce.Write(fields(args)...)
	}
}

func (l *hclogZap) Trace(msg string, args ...interface{}) { l.Log(hclog.Trace, msg, args...) }
func (l *hclogZap) Debug(msg string, args ...interface{}) { l.Log(hclog.Debug, msg, args...) }
func (l *hclogZap) Info(msg string, args ...interface{})  { l.Log(hclog.Info, msg, args...) }
func (l *hclogZap) Warn(msg string, args ...interface{})  { l.Log(hclog.Warn, msg, args...) }
func (l *hclogZap) Error(msg string, args ...interface{}) { l.Log(hclog.Error, msg, args...) }

func (l *hclogZap) enabled(level hclog.Level) bool {
	return level >= l.GetLevel() && l.z.Core().Enabled(zapLevel(level))
}

func (l *hclogZap) IsTrace() bool { return l.enabled(hclog.Trace) }
func (l *hclogZap) IsDebug() bool { return l.enabled(hclog.Debug) }
func (l *hclogZap) IsInfo() bool  { return l.enabled(hclog.Info) }
func (l *hclogZap) IsWarn() bool  { return l.enabled(hclog.Warn) }
func (l *hclogZap) IsError() bool { return l.enabled(hclog.Error) }

func (l *hclogZap) ImpliedArgs() []interface{} { return l.implied }

func (l *hclogZap) With(args ...interface{}) hclog.Logger {
	implied := append(append([]interface{}{}, l.implied...), args...)
	return l.derive(l.name, implied)
}

func (l *hclogZap) Name() string { return l.name }

func (l *hclogZap) Named(name string) hclog.Logger {
	if l.name != "" {
		name = l.name + "." + name
	}
	return l.derive(name, l.implied)
}

func (l *hclogZap) ResetNamed(name string) hclog.Logger { return l.derive(name, l.implied) }

func (l *hclogZap) SetLevel(level hclog.Level) { l.level.Store(int32(level)) }

func (l *hclogZap) GetLevel() hclog.Level { return hclog.Level(l.level.Load()) }

func (l *hclogZap) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	level := zapcore.InfoLevel
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = zapLevel(opts.ForceLevel)
	}
	std, err := zap.NewStdLogAt(l.z, level)
	if err != nil {
		// Only an invalid level fails, and zapLevel returns valid ones.
		return zap.NewStdLog(l.z)
	}
	return std
}

func (l *hclogZap) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return l.StandardLogger(opts).Writer()
}
