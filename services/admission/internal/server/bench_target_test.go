package server

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	rtmetrics "runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/admission/internal/pluginhost"
	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
	"github.com/splitlet/splitlet/services/admission/plugin/gctune"
)

// pin makes the Admit benchmarks run the service (and its plugin children)
// in a child process pinned to one CPU while the benchmark, the client,
// pins itself to another, so that neither waits for the other's core:
//
//	go test -run xxx -bench BenchmarkAdmit110 -benchtime 2000x ./internal/server/ -args -pin
//
// Linux only, on a machine where this process may use at least two CPUs;
// elsewhere the benchmarks skip and say why. The pinning lasts for the
// rest of the test binary's run.
var pin = flag.Bool("pin", false, "run the Admit benchmarks' service in a child process pinned to a CPU of its own")

// envBenchService makes the test binary serve the benchmark's admission
// service instead of running tests (TestMain): its value is the CPU to
// pin to, and envBenchService+"_PLUGINS" the plugin configuration file.
// envBenchService+"_CPUPROFILE", set by whoever runs the benchmark, names
// a file for the service process's CPU profile (a run's profiles
// overwrite each other: select one benchmark).
const envBenchService = "SPLITLET_BENCH_ADMISSION_SERVICE"

func TestMain(m *testing.M) {
	if cpu := os.Getenv(envBenchService); cpu != "" {
		os.Exit(serveBenchService(cpu, os.Getenv(envBenchService+"_PLUGINS")))
	}
	os.Exit(m.Run())
}

// benchNode is the node of the Admit benchmarks: room for every pod they
// send, so that every Admit is admitted.
func benchNode() *v1.Node {
	node := testfixture.Node()
	node.Status.Allocatable[v1.ResourcePods] = resource.MustParse("200")
	node.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("64")
	node.Status.Allocatable[v1.ResourceMemory] = resource.MustParse("256Gi")
	return node
}

// benchTarget is the admission service an Admit benchmark calls: wired as
// Run wires it (newAdmission), in this process or, with -pin, in a pinned
// child process.
type benchTarget struct {
	client admissionv1connect.AdmissionServiceClient
	// usage is what the service's process and its plugin children have
	// used so far, when they run apart (-pin); nil otherwise.
	usage func() serviceUsage
}

// procUsage is what a process, or a set of processes, has used: CPU time
// (user and system) and read- and write-family syscalls.
type procUsage struct {
	cpu      time.Duration
	syscalls int64
}

func (u procUsage) add(v procUsage) procUsage {
	return procUsage{cpu: u.cpu + v.cpu, syscalls: u.syscalls + v.syscalls}
}

func (u procUsage) sub(v procUsage) procUsage {
	return procUsage{cpu: u.cpu - v.cpu, syscalls: u.syscalls - v.syscalls}
}

// serviceUsage is what a pinned benchmark service has used so far: its own
// process, its plugin children, and its Go heap (bytes allocated and GC
// cycles, runtime/metrics as the service process reports them).
type serviceUsage struct {
	service, plugins    procUsage
	heapAlloc, gcCycles uint64
}

func (u serviceUsage) sub(v serviceUsage) serviceUsage {
	return serviceUsage{
		service:   u.service.sub(v.service),
		plugins:   u.plugins.sub(v.plugins),
		heapAlloc: u.heapAlloc - v.heapAlloc,
		gcCycles:  u.gcCycles - v.gcCycles,
	}
}

// startBenchTarget starts the service, with the plugins of the
// configuration file pluginsFile (none when empty), and stops it at the
// end of the benchmark.
func startBenchTarget(b *testing.B, pluginsFile string) *benchTarget {
	b.Helper()
	if *pin {
		return startPinnedBenchTarget(b, pluginsFile)
	}
	var cfg *pluginhost.Config
	if pluginsFile != "" {
		var err error
		if cfg, err = pluginhost.LoadConfig(pluginsFile); err != nil {
			b.Fatal(err)
		}
	}
	a, err := newAdmission(context.Background(), benchNode(), nil, cfg, Options{Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(a.close)
	_, url := startServer(b, a.svc)
	return &benchTarget{client: syncClient(b, url)}
}

// syncClient calls the service at url as sync's admission client does:
// the Connect protocol over HTTP/1.1 (see the sync admission package's New).
func syncClient(b *testing.B, url string) admissionv1connect.AdmissionServiceClient {
	httpClient := &http.Client{Transport: &http.Transport{}}
	b.Cleanup(httpClient.CloseIdleConnections)
	return admissionv1connect.NewAdmissionServiceClient(httpClient, url)
}

// pinClient pins this process, the benchmark's client, once per run.
var pinClient = sync.OnceValues(func() (cpus []int, err error) {
	cpus, err = allowedCPUs()
	if err != nil {
		return nil, err
	}
	if len(cpus) < 2 {
		return nil, fmt.Errorf("this process may use %d CPU(s) (%v); pinning needs two", len(cpus), cpus)
	}
	return cpus, pinProcess(cpus[0])
})

func startPinnedBenchTarget(b *testing.B, pluginsFile string) *benchTarget {
	b.Helper()
	cpus, err := pinClient()
	if err != nil {
		b.Skipf("-pin: cannot pin the benchmark: %v", err)
	}
	client, err := threadCPUs(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envBenchService+"="+strconv.Itoa(cpus[1]), envBenchService+"_PLUGINS="+pluginsFile)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		// Closing stdin asks the service to stop its plugins and exit.
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			b.Errorf("benchmark service: %v", err)
		}
	})
	replies := bufio.NewReader(stdout)
	line, err := replies.ReadString('\n')
	if err != nil {
		b.Fatalf("benchmark service did not report its address: %v", err)
	}
	addr := strings.TrimSpace(line)
	service, err := threadCPUs(cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	// Every thread of the service and its plugins on one CPU, every
	// thread of this process on the other, or the pinning failed.
	b.Logf("service pid %d and its plugins run on CPU %s; this process on CPU %s", cmd.Process.Pid, service, client)
	if service != strconv.Itoa(cpus[1]) || client != strconv.Itoa(cpus[0]) {
		b.Fatalf("service threads on CPUs %q and client threads on %q, want %d and %d", service, client, cpus[1], cpus[0])
	}

	pid := cmd.Process.Pid
	return &benchTarget{
		client: syncClient(b, "http://"+addr),
		usage: func() serviceUsage {
			var u serviceUsage
			var err error
			if u.service, u.plugins, err = processTreeUsage(pid); err != nil {
				b.Fatalf("usage of the benchmark service: %v", err)
			}
			if _, err := io.WriteString(stdin, heapUsageRequest+"\n"); err != nil {
				b.Fatalf("ask the benchmark service for its heap figures: %v", err)
			}
			line, err := replies.ReadString('\n')
			if err == nil {
				_, err = fmt.Sscan(line, &u.heapAlloc, &u.gcCycles)
			}
			if err != nil {
				b.Fatalf("the benchmark service's heap figures: %q: %v", line, err)
			}
			return u
		},
	}
}

// heapUsageRequest, a line on a pinned benchmark service's stdin, asks it to
// print the bytes its Go heap has allocated and the GC cycles it has run so
// far, as one line on its stdout.
const heapUsageRequest = "heap"

// serveBenchService is the child process of a pinned benchmark: it pins
// itself to cpu (the plugins it starts inherit it), serves the admission
// service on a loopback port it prints on stdout, answers each
// heapUsageRequest line on stdin, and exits when stdin is closed.
func serveBenchService(cpu, pluginsFile string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "benchmark service:", err)
		return 1
	}
	n, err := strconv.Atoi(cpu)
	if err != nil {
		return fail(err)
	}
	if err := pinProcess(n); err != nil {
		return fail(err)
	}
	// As splitlet-admission's main.
	gctune.Apply()
	if path := os.Getenv(envBenchService + "_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	if path := os.Getenv(envBenchService + "_MEMPROFILE"); path != "" {
		// Written at exit: alloc_space shows what the calls allocated.
		defer func() {
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	var cfg *pluginhost.Config
	if pluginsFile != "" {
		if cfg, err = pluginhost.LoadConfig(pluginsFile); err != nil {
			return fail(err)
		}
	}
	a, err := newAdmission(context.Background(), benchNode(), nil, cfg, Options{Logger: zap.NewNop()})
	if err != nil {
		return fail(err)
	}
	defer a.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	srv := newHTTPServer(a.svc.Handler())
	go srv.Serve(ln) //nolint:errcheck // ends with Close below
	defer srv.Close()
	fmt.Println(ln.Addr().String())
	heap := []rtmetrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	for in := bufio.NewScanner(os.Stdin); in.Scan(); {
		if in.Text() != heapUsageRequest {
			continue
		}
		rtmetrics.Read(heap)
		fmt.Println(heap[0].Value.Uint64(), heap[1].Value.Uint64())
	}
	return 0
}
