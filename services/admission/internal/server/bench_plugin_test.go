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
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
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
// allow-list plugin as a real child process in the chain, called as sync
// calls it (Connect over HTTP/1.1, loopback; syncClient) with 110 typical
// active pods (testfixture.TypicalPod).
// It reports p50 and p99 of the per-call latencies and CPU time per call
// (benchMeter; -pin runs the service apart, on a CPU of its own).
//
//	steady: the same 110 active pods on every call, which is what sync
//	        sends: its active set changes rarely.
//	churn:  one active pod is replaced by a new one before every call.
//	refs:   steady, with the active pods by reference (uid and digest):
//	        in full only on a first call, made before the measured ones.
//	set:    steady, with the active set named by its digest alone
//	        (AdmitRequest.active_set), as sync sends an unchanged set: in
//	        full with the digest on a first call, made before the
//	        measured ones.
func BenchmarkAdmit110Plugin(b *testing.B) {
	target := startBenchTarget(b, allowlistPlugin(b))
	pod := mustMarshal(b, testfixture.TypicalPod("new"))
	ctx := context.Background()
	for _, mode := range []string{"steady", "churn", "refs", "set"} {
		b.Run(mode, func(b *testing.B) {
			active := make([][]byte, 110)
			for i := range active {
				active[i] = mustMarshal(b, testfixture.TypicalPod(fmt.Sprint(i)))
			}
			var refs []*admissionv1.ActivePod
			var set []byte
			if mode == "refs" || mode == "set" {
				full := make([]*admissionv1.ActivePod, len(active))
				digests := sha256.New()
				for i, raw := range active {
					d := sha256.Sum256(raw)
					digests.Write(d[:])
					refs = append(refs, &admissionv1.ActivePod{Uid: string(testfixture.TypicalPod(fmt.Sprint(i)).UID), Digest: d[:]})
					full[i] = &admissionv1.ActivePod{Uid: refs[i].Uid, Digest: d[:], Pod: raw}
				}
				if mode == "set" {
					set, refs = digests.Sum(nil), nil
				}
				resp, err := target.client.Admit(ctx, connect.NewRequest(&admissionv1.AdmitRequest{Pod: pod, Active: full, ActiveSet: set}))
				if err != nil || (set != nil && !resp.Msg.ActiveSetHeld) {
					b.Fatalf("first call: %v %v", resp, err)
				}
				active = nil
			}
			m := target.meter(b)
			for b.Loop() {
				if mode == "churn" {
					n := m.calls()
					active[n%len(active)] = mustMarshal(b, testfixture.TypicalPod(fmt.Sprintf("churn-%d", n)))
				}
				req := connect.NewRequest(&admissionv1.AdmitRequest{Pod: pod, ActivePods: active, Active: refs, ActiveSet: set})
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
