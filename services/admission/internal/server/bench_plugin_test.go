package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
)

// allowlistPlugin builds the example image allow-list plugin into a
// temporary directory and returns a plugin configuration file that runs it,
// to be loaded as the process loads it.
func allowlistPlugin(b *testing.B) string {
	b.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		b.Skip("the plugin benchmark builds the example plugin and needs the go toolchain in PATH: " + err.Error())
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "splitlet-plugin-image-allowlist")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/splitlet/splitlet/services/admission/cmd/splitlet-plugin-image-allowlist")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	content, err := os.ReadFile(bin)
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(content)
	cfgFile := filepath.Join(dir, "plugins.yaml")
	yaml := fmt.Sprintf(`plugins:
  - name: image-allowlist
    path: %s
    sha256: %s
    env:
      SPLITLET_IMAGE_ALLOWLIST: registry.local/
`, bin, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	return cfgFile
}

func mustMarshal(b *testing.B, p *v1.Pod) []byte {
	b.Helper()
	out, err := p.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkAdmit110Plugin measures the whole path of the issue "Admit p99
// with 110 active pods and one out-of-process plugin, target under 1 ms":
// the service wired as Run wires it (newAdmission), the example image
// allow-list plugin as a real child process in the chain, called over gRPC
// (h2c, loopback) with 110 typical active pods (testfixture.TypicalPod).
// It reports p50 and p99 of the per-call latencies and CPU time per call
// (benchMeter; -pin runs the service apart, on a CPU of its own).
//
//	steady: the same 110 active pods on every call, which is what sync
//	        sends: its active set changes rarely.
//	churn:  one active pod is replaced by a new one before every call.
//	refs:   steady, with the active pods by reference (uid and digest),
//	        as sync sends them: in full only on a first call, made before
//	        the measured ones.
func BenchmarkAdmit110Plugin(b *testing.B) {
	target := startBenchTarget(b, allowlistPlugin(b))
	pod := mustMarshal(b, testfixture.TypicalPod("new"))
	ctx := context.Background()
	for _, mode := range []string{"steady", "churn", "refs"} {
		b.Run(mode, func(b *testing.B) {
			active := make([][]byte, 110)
			for i := range active {
				active[i] = mustMarshal(b, testfixture.TypicalPod(fmt.Sprint(i)))
			}
			var refs []*admissionv1.ActivePod
			if mode == "refs" {
				full := make([]*admissionv1.ActivePod, len(active))
				for i, raw := range active {
					d := sha256.Sum256(raw)
					refs = append(refs, &admissionv1.ActivePod{Uid: string(testfixture.TypicalPod(fmt.Sprint(i)).UID), Digest: d[:]})
					full[i] = &admissionv1.ActivePod{Uid: refs[i].Uid, Digest: d[:], Pod: raw}
				}
				if _, err := target.client.Admit(ctx, connect.NewRequest(&admissionv1.AdmitRequest{Pod: pod, Active: full})); err != nil {
					b.Fatal(err)
				}
				active = nil
			}
			m := target.meter(b)
			for b.Loop() {
				if mode == "churn" {
					n := m.calls()
					active[n%len(active)] = mustMarshal(b, testfixture.TypicalPod(fmt.Sprintf("churn-%d", n)))
				}
				req := connect.NewRequest(&admissionv1.AdmitRequest{Pod: pod, ActivePods: active, Active: refs})
				start := time.Now()
				resp, err := target.client.Admit(ctx, req)
				m.observe(time.Since(start))
				if err != nil || !resp.Msg.Admit {
					b.Fatalf("Admit: %v %v", resp, err)
				}
			}
			m.report(b)
		})
	}
}
