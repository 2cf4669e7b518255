// Command standin plays, inside critest's images, the few upstream programs that
// are not busybox: nginx, httpd, nonewprivs and the pause process. It does only
// what critest v1.30.0 checks of them. It picks its role from the name of the
// file it runs as (/usr/sbin/nginx, .../httpd, .../nnp, /pause), so one static
// binary serves every image.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// nginxTitle is how a real nginx master process shows in /proc/PID/cmdline;
// critest's ContainerPID spec greps PID 1's cmdline for "master process".
const nginxTitle = "nginx: master process nginx -g daemon off;"

func main() {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
	os.Exit(run(filepath.Base(exe), exe, os.Args, os.Stdout, os.Stderr))
}

// run dispatches on role, the executable's base name, and returns the exit code.
func run(role, exe string, args []string, stdout, stderr io.Writer) int {
	switch role {
	case "nginx":
		// Re-exec under the master title; the executable's file name keeps the
		// kernel's comm "nginx", which is what `pidof nginx` matches.
		if len(args) == 0 || args[0] != nginxTitle {
			err := syscall.Exec(exe, []string{nginxTitle}, os.Environ())
			fmt.Fprintln(stderr, "standin: re-exec:", err)
			return 1
		}
		if err := os.WriteFile("/var/run/nginx.pid", []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			fmt.Fprintln(stderr, "standin:", err)
			return 1
		}
		return serve(stderr)
	case "httpd":
		// critest's multi-container spec looks for this in the container log.
		fmt.Fprintln(stderr, "AH00094: Command line: 'httpd -D FOREGROUND'")
		return serve(stderr)
	case "nnp":
		// Installed setuid root: prints 0 unless no_new_privs stopped the setuid.
		fmt.Fprintf(stdout, "Effective uid: %d\n", os.Geteuid())
		return 0
	case "pause":
		return pause()
	case "pgrep":
		return pgrep(args[1:], stdout, stderr)
	case "ipcs":
		return ipcs(stdout, stderr)
	default:
		fmt.Fprintf(stderr, "standin: unknown role %q (install as nginx, httpd, nnp, pause, pgrep or ipcs)\n", role)
		return 2
	}
}

// serve answers 200 on every path at :$STANDIN_PORT until SIGTERM or SIGQUIT.
func serve(stderr io.Writer) int {
	port := os.Getenv("STANDIN_PORT")
	if port == "" {
		port = "80"
	}
	srv := &http.Server{Addr: ":" + port, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "<html><body>standin</body></html>\n")
	})}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGINT)
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case <-stop:
		return 0
	case err := <-errc:
		fmt.Fprintln(stderr, "standin:", err)
		return 1
	}
}

// pause waits for SIGTERM or SIGINT and reaps orphans meanwhile, as the pause
// container does when it is PID 1 of a shared PID namespace.
func pause() int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return 0
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
	return 0
}

// pgrep PATTERN prints the PIDs whose process name matches PATTERN and exits 1
// when none does, like procps and busybox pgrep without options.
func pgrep(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: pgrep PATTERN")
		return 2
	}
	re, err := regexp.Compile(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "pgrep:", err)
		return 2
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		fmt.Fprintln(stderr, "pgrep:", err)
		return 3
	}
	found := false
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", d.Name(), "comm"))
		if err != nil {
			continue // the process exited meanwhile
		}
		if re.MatchString(strings.TrimSpace(string(comm))) {
			fmt.Fprintln(stdout, pid)
			found = true
		}
	}
	if !found {
		return 1
	}
	return 0
}

// ipcs lists the System V shared memory segments of the IPC namespace it runs
// in (what `ipcs -m` shows), read from /proc/sysvipc/shm.
func ipcs(stdout, stderr io.Writer) int {
	f, err := os.Open("/proc/sysvipc/shm")
	if err != nil {
		fmt.Fprintln(stderr, "ipcs:", err)
		return 1
	}
	defer f.Close()
	fmt.Fprintln(stdout, "------ Shared Memory Segments --------")
	fmt.Fprintf(stdout, "%-10s %-10s %-10s %-10s %-10s %-10s\n", "key", "shmid", "owner", "perms", "bytes", "nattch")
	sc := bufio.NewScanner(f)
	sc.Scan() // header: key shmid perms size cpid lpid nattch uid ...
	for sc.Scan() {
		c := strings.Fields(sc.Text())
		if len(c) < 8 {
			continue
		}
		key, _ := strconv.ParseInt(c[0], 10, 64)
		fmt.Fprintf(stdout, "0x%08x %-10s %-10s %-10s %-10s %-10s\n", uint32(key), c[1], c[7], c[2], c[3], c[6])
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(stderr, "ipcs:", err)
		return 1
	}
	return 0
}
