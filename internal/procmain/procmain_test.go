package procmain

import (
	"context"
	"errors"
	"flag"
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
