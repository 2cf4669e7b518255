package pluginhost

import (
	"testing"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestHCLogToZap(t *testing.T) {
	tests := []struct {
		desc      string
		log       func(l hclog.Logger)
		wantLevel zapcore.Level
		wantName  string
		wantField map[string]interface{}
		wantNone  bool
	}{
		{desc: "trace becomes debug", log: func(l hclog.Logger) { l.Trace("t") }, wantLevel: zapcore.DebugLevel},
		{desc: "warn keeps its level and args become fields", log: func(l hclog.Logger) { l.Warn("w", "pid", 42, "path", "/x") }, wantLevel: zapcore.WarnLevel, wantField: map[string]interface{}{"pid": int64(42), "path": "/x"}},
		{desc: "error with a dangling value", log: func(l hclog.Logger) { l.Error("e", "lonely") }, wantLevel: zapcore.ErrorLevel, wantField: map[string]interface{}{"EXTRA_VALUE_AT_END": "lonely"}},
		{desc: "named and with carry over", log: func(l hclog.Logger) { l.Named("stdio").With("plugin", "a").Info("i") }, wantLevel: zapcore.InfoLevel, wantName: "stdio", wantField: map[string]interface{}{"plugin": "a"}},
		{desc: "reset named drops the old name", log: func(l hclog.Logger) { l.Named("x").ResetNamed("y").Info("i") }, wantLevel: zapcore.InfoLevel, wantName: "y"},
		{desc: "SetLevel filters below it", log: func(l hclog.Logger) { l.SetLevel(hclog.Warn); l.Info("dropped") }, wantNone: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			tc.log(newHCLogger(zap.New(core)))
			entries := logs.All()
			if tc.wantNone {
				if len(entries) != 0 {
					t.Fatalf("logged %d entries, want none", len(entries))
				}
				return
			}
			if len(entries) != 1 {
				t.Fatalf("logged %d entries, want 1", len(entries))
			}
			e := entries[0]
			if e.Level != tc.wantLevel {
				t.Errorf("level = %v, want %v", e.Level, tc.wantLevel)
			}
			if e.LoggerName != tc.wantName {
				t.Errorf("logger name = %q, want %q", e.LoggerName, tc.wantName)
			}
			ctx := e.ContextMap()
			for k, v := range tc.wantField {
				if ctx[k] != v {
					t.Errorf("field %s = %#v, want %#v (all: %v)", k, ctx[k], v, ctx)
				}
			}
		})
	}
}

func TestHCLogLevelFollowsZap(t *testing.T) {
	core, _ := observer.New(zapcore.WarnLevel)
	l := newHCLogger(zap.New(core))
	if l.GetLevel() != hclog.Warn || l.IsInfo() || !l.IsError() {
		t.Errorf("level %v, IsInfo %v, IsError %v: want Warn, false, true", l.GetLevel(), l.IsInfo(), l.IsError())
	}
}
