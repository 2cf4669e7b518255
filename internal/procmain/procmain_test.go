package procmain

import (
	"context"
	"errors"
	"flag"
	"runtime/debug"
	"testing"

	"go.uber.org/zap"
)

func TestMainExitStatus(t *testing.T) {
	logger := func() (*zap.Logger, error) { return zap.NewNop(), nil }
	ran := false
	run := func(err error) func(context.Context) error {
		return func(context.Context) error { ran = true; return err }
	}
	for _, tc := range []struct {
		desc    string
		setup   Setup
		err     error
		want    int
		wantRan bool
	}{
		{desc: "--help", err: flag.ErrHelp, want: 0},
		{desc: "a bad command line", err: errors.New("bad flag"), want: 2},
		{desc: "done already (--version)", setup: Setup{Done: true}, want: 0},
		{desc: "a bad logger configuration", setup: Setup{Logger: func() (*zap.Logger, error) { return nil, errors.New("bad level") }}, want: 2},
		{desc: "a clean stop", setup: Setup{Logger: logger, Run: run(nil)}, want: 0, wantRan: true},
		{desc: "a failed run", setup: Setup{Logger: logger, Run: run(errors.New("boom"))}, want: 1, wantRan: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ran = false
			got := Main(Process{Name: "splitlet-test"}, func() (Setup, error) { return tc.setup, tc.err })
			if got != tc.want || ran != tc.wantRan {
				t.Errorf("exit status %d, ran %v; want %d, %v", got, ran, tc.want, tc.wantRan)
			}
		})
	}
}

func TestApplyRuntimeDefaults(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		desc string
		env  string
		p    Process
		want int
	}{
		{desc: "unset: the process's default", p: Process{GCPercent: 300}, want: 300},
		{desc: "set: the environment's", env: "150", p: Process{GCPercent: 300}, want: 150},
		{desc: "no default: Go's own", p: Process{}, want: 100},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Setenv("GOGC", tc.env)
			if tc.env != "" {
				debug.SetGCPercent(150) // as the runtime would have read it
			} else {
				debug.SetGCPercent(100)
			}
			ApplyRuntimeDefaults(tc.p)
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GOGC %d, want %d", got, tc.want)
			}
		})
	}
}
