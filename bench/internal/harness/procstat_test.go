package harness

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		in      string
		want    uint64
		wantErr bool
	}{
		{desc: "plain command", in: "42 (sync) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 10 0 1000 1 1 18446744073709551615",
			want: 300},
		{desc: "command with spaces and parentheses", in: "7 (a b) (c)) R 1 7 7 0 -1 0 0 0 0 0 11 22 0 0 20 0 1 0 5 1 1",
			want: 33},
		{desc: "no closing parenthesis", in: "7 (abc R 1 2 3", wantErr: true},
		{desc: "too few fields", in: "7 (abc) R 1 2 3", wantErr: true},
		{desc: "utime not a number", in: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 x 22 0 0", wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := parseStat([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseStat error = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("parseStat = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		desc             string
		in               string
		wantRSS, wantHWM uint64
		wantErr          bool
	}{
		{desc: "both present", in: "Name:\tsync\nVmPeak:\t 900 kB\nVmHWM:\t   5120 kB\nVmRSS:\t   4096 kB\nThreads:\t9\n",
			wantRSS: 4096, wantHWM: 5120},
		{desc: "missing VmHWM", in: "Name:\tx\nVmRSS:\t 1 kB\n", wantErr: true},
		{desc: "bad number", in: "VmHWM:\t zz kB\nVmRSS:\t 1 kB\n", wantErr: true},
		{desc: "empty value", in: "VmHWM:\nVmRSS:\t 1 kB\n", wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rss, hwm, err := parseStatus([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseStatus error = %v, wantErr %v", err, tc.wantErr)
			}
			if rss != tc.wantRSS || hwm != tc.wantHWM {
				t.Errorf("parseStatus = %d, %d, want %d, %d", rss, hwm, tc.wantRSS, tc.wantHWM)
			}
		})
	}
}

// TestReadProcSelf reads this test process, so the parsers meet the real
// kernel's format.
func TestReadProcSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here: the harness reads Linux's /proc only")
	}
	// Burn some CPU so utime moves past zero.
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	_ = x
	s, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.cpuTicks == 0 {
		t.Errorf("cpuTicks = 0 after a busy loop")
	}
	if s.rssKiB == 0 || s.hwmKiB < s.rssKiB {
		t.Errorf("rss %d KiB, hwm %d KiB: want rss > 0 and hwm >= rss", s.rssKiB, s.hwmKiB)
	}
}

// The harness's own CPU reading grows while it works, and by no more than
// its threads could have used in the wall time.
func TestHarnessCPU(t *testing.T) {
	h := startHarnessCPU()
	t0 := time.Now()
	var x uint64
	for time.Since(t0) < 100*time.Millisecond {
		for i := range 10000 {
			x += uint64(i) * x
		}
	}
	wall := time.Since(t0).Seconds()
	cpu, err := h.done()
	if err != nil {
		t.Fatal(err)
	}
	if limit := wall*float64(runtime.GOMAXPROCS(0)) + 0.05; cpu <= 0 || cpu > limit {
		t.Errorf("harness CPU over a %.2f s busy loop = %.3f s, want in (0, %.2f]", wall, cpu, limit)
	}
	_ = x
}
