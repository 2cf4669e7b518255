package cmd

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestAgainstServer runs read-only commands against a real splitlet-sync
// named by SPLITCTL_TEST_SERVER (e.g. http://127.0.0.1:7443).
func TestAgainstServer(t *testing.T) {
	addr := os.Getenv("SPLITCTL_TEST_SERVER")
	if addr == "" {
		t.Skip("SPLITCTL_TEST_SERVER is not set: no splitlet-sync to talk to")
	}
	for _, args := range [][]string{{"get", "pods", "-A"}, {"get", "pods", "-A", "-o", "json"}, {"events", "-A"}} {
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code := Main(ctx, append([]string{"--server", addr}, args...), &Env{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Getenv: os.Getenv})
		cancel()
		if code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, errOut.String())
		}
	}
}
