package logctx

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestFromAndLookup(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l := zap.New(core)
	tests := []struct {
		desc       string
		ctx        context.Context
		wantLogged int
		wantLookup bool
	}{
		{desc: "logger carried", ctx: With(context.Background(), l), wantLogged: 1, wantLookup: true},
		{desc: "no logger: From is a no-op logger, Lookup nil", ctx: context.Background(), wantLogged: 0},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			before := logs.Len()
			From(tc.ctx).Info("hello")
			if got := logs.Len() - before; got != tc.wantLogged {
				t.Errorf("From logged %d lines, want %d", got, tc.wantLogged)
			}
			if got := Lookup(tc.ctx) != nil; got != tc.wantLookup {
				t.Errorf("Lookup found a logger = %v, want %v", got, tc.wantLookup)
			}
		})
	}
}
