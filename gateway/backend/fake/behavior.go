package fake

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Where a container's script is read from, in this order.
const (
	// BehaviorAnnotation on the container config scripts that container.
	BehaviorAnnotation = "fake.splitlet.dev/behavior"
	// BehaviorPodAnnotationPrefix + container name, on the sandbox config
	// (pod annotations reach it), scripts the named container.
	BehaviorPodAnnotationPrefix = "fake.splitlet.dev/behavior."
	// BehaviorEnv in the container's environment scripts it.
	BehaviorEnv = "SPLITLET_FAKE_BEHAVIOR"
)

// execFailAlways marks exec-fail=always.
const execFailAlways = -1

// behavior is what a container does once started. The zero value runs until
// stopped, exits 0 when it exits on its own, and answers exec normally.
type behavior struct {
	exitCode      int32
	exitSet       bool
	after         time.Duration // 0: run until stopped
	crash         bool
	oom           bool
	stdout        []string
	execFail      int // number of failing ExecSync calls; execFailAlways for all
	ignoreSigterm bool
	startFail     bool
}

// behaviorSource returns the script for a container and where it came from.
func behaviorSource(cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, string) {
	if v, ok := cfg.GetAnnotations()[BehaviorAnnotation]; ok {
		return v, "container annotation " + BehaviorAnnotation
	}
	key := BehaviorPodAnnotationPrefix + cfg.GetMetadata().GetName()
	if v, ok := sbCfg.GetAnnotations()[key]; ok {
		return v, "pod annotation " + key
	}
	for _, kv := range cfg.GetEnvs() {
		if kv.GetKey() == BehaviorEnv {
			return string(kv.GetValue()), "env " + BehaviorEnv
		}
	}
	return "", ""
}

// parseBehavior parses a script: space-separated tokens, values optionally
// double-quoted (`stdout="a b|c"`). A bad token is an InvalidArgument error
// naming it.
func parseBehavior(s string) (behavior, error) {
	var b behavior
	toks, err := splitTokens(s)
	if err != nil {
		return b, err
	}
	for _, tok := range toks {
		key, val, hasVal := strings.Cut(tok.text, "=")
		bad := func(why string) error {
			return fmt.Errorf("fake behavior token %q: %s: %w", tok.raw, why, errdefs.ErrInvalidArgument)
		}
		noValue := func() error {
			if hasVal {
				return bad("takes no value")
			}
			return nil
		}
		switch key {
		case "exit":
			n, err := strconv.ParseInt(val, 10, 32)
			if !hasVal || err != nil || n < 0 || n > 255 {
				return b, bad("want exit=N with N in 0..255")
			}
			b.exitCode, b.exitSet = int32(n), true
		case "after":
			d, err := time.ParseDuration(val)
			if !hasVal || err != nil || d <= 0 {
				return b, bad("want after=DURATION, a positive Go duration such as 500ms")
			}
			b.after = d
		case "crash":
			if err := noValue(); err != nil {
				return b, err
			}
			b.crash = true
		case "oom":
			if err := noValue(); err != nil {
				return b, err
			}
			b.oom = true
		case "stdout":
			if !hasVal {
				return b, bad(`want stdout="line one|line two"`)
			}
			b.stdout = strings.Split(val, "|")
		case "exec-fail":
			if val == "always" {
				b.execFail = execFailAlways
				break
			}
			n, err := strconv.Atoi(val)
			if !hasVal || err != nil || n < 0 {
				return b, bad("want exec-fail=N or exec-fail=always")
			}
			b.execFail = n
		case "ignore-sigterm":
			if err := noValue(); err != nil {
				return b, err
			}
			b.ignoreSigterm = true
		case "start-fail":
			if err := noValue(); err != nil {
				return b, err
			}
			b.startFail = true
		default:
			return b, bad("unknown token")
		}
	}
	return b, nil
}

// exitOnOwn returns the exit code and reason of a container ending by itself.
func (b behavior) exitOnOwn() (int32, string) {
	if b.oom {
		// The kernel OOM killer sends SIGKILL: 128+9.
		return 137, reasonOOMKilled
	}
	code := b.exitCode
	if b.crash && !b.exitSet {
		code = 1
	}
	return code, ""
}

// exitsAtStart reports whether the container ends as soon as it starts.
func (b behavior) exitsAtStart() bool {
	return b.crash || (b.oom && b.after == 0)
}

type token struct{ raw, text string }

// splitTokens splits on unquoted spaces and removes the double quotes.
func splitTokens(s string) ([]token, error) {
	var (
		toks    []token
		raw     strings.Builder
		text    strings.Builder
		inQuote bool
		have    bool
	)
	flush := func() {
		if have {
			toks = append(toks, token{raw: raw.String(), text: text.String()})
		}
		raw.Reset()
		text.Reset()
		have = false
	}
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			raw.WriteRune(r)
			have = true
		case (r == ' ' || r == '\t' || r == '\n') && !inQuote:
			flush()
		default:
			raw.WriteRune(r)
			text.WriteRune(r)
			have = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("fake behavior %q: unterminated quote: %w", s, errdefs.ErrInvalidArgument)
	}
	flush()
	return toks, nil
}
