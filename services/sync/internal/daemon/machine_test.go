package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// The Node reports the machine's swap capacity only when it has swap, as
// the kubelet's MachineInfo setter.
func TestNodeSwap(t *testing.T) {
	meminfo := func(swapKB string) string {
		p := filepath.Join(t.TempDir(), "meminfo")
		content := "MemTotal:       24000000 kB\nSwapCached:            0 kB\nSwapTotal:      " + swapKB + " kB\nSwapFree:       " + swapKB + " kB\n"
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got := nodeSwap(meminfo("2097148")); got == nil || got.Capacity == nil || *got.Capacity != 2097148*1024 {
		t.Errorf("with 2 GiB of swap: %+v, want a capacity of %d bytes", got, 2097148*1024)
	}
	if got := nodeSwap(meminfo("0")); got != nil {
		t.Errorf("without swap: %+v, want nil", got)
	}
	if got := nodeSwap(filepath.Join(t.TempDir(), "missing")); got != nil {
		t.Errorf("no meminfo: %+v, want nil", got)
	}
	if got := meminfoBytes(meminfo("0"), "MemTotal"); got != 24000000*1024 {
		t.Errorf("MemTotal: %d", got)
	}
}
