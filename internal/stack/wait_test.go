package stack

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeTB records the failure WaitFor reports.
type fakeTB struct{ failed string }

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

func TestWaitFor(t *testing.T) {
	polls := 0
	var ok fakeTB
	WaitFor(&ok, time.Minute, "the third poll", func() (bool, string) {
		polls++
		return polls == 3, fmt.Sprintf("poll %d", polls)
	})
	if ok.failed != "" || polls != 3 {
		t.Errorf("polls %d, failure %q; want 3 polls and no failure", polls, ok.failed)
	}
	var late fakeTB
	WaitFor(&late, 300*time.Millisecond, "never", func() (bool, string) { return false, "still not" })
	if !strings.Contains(late.failed, "waiting for never: still not") {
		t.Errorf("failure %q, want what and the last message", late.failed)
	}
}
