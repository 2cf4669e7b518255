package fake

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// shellPrompt is busybox sh's prompt for root in /.
const shellPrompt = "/ # "

// Exec runs cmd in the container for the streaming server, once the client
// has connected to the URL Runtime.Exec returned:
//   - a shell (sh, bash or ash) without -c, given stdin, is interactive: it
//     reads lines from stdin and interprets each as ExecSync would a
//     `sh -c` script, until `exit N` (exit code N) or the end of stdin (the
//     last command's exit code, as sh). With a TTY it prints busybox's
//     prompt "/ # " before each line and the TTY echoes what is typed;
//   - `cat` without arguments, given stdin, copies stdin to stdout;
//   - any other command runs once, as in ExecSync.
//
// With a TTY, stderr is written to stdout, as on a terminal, and output
// newlines become CRLF (the TTY's ONLCR). A non-zero exit code is returned
// as a utilexec.CodeExitError, which the streaming server sends to the
// client as the NonZeroExitCode status, as it does for containerd's. stdout
// and stderr are closed when the command ends, as containerd's exec I/O
// closes them, so the client reads their end before the status.
//
// When the container leaves RUNNING (it exits, is stopped or removed) while
// the command still runs, the command ends with exit code 137: runc's
// container is a PID namespace, and the kernel SIGKILLs what is left in it
// when its init dies. When the client goes away or the runtime closes, the
// command ends too.
func (s streams) Exec(ctx context.Context, containerID string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize) error {
	defer closeStreams(out, errw)
	exited, err := s.r.runningContainerExited(containerID)
	if err != nil {
		return fmt.Errorf("failed to exec in container: %w", err)
	}
	if len(cmd) == 0 {
		return nil // Runtime.Exec refuses it; nothing to run
	}
	con := newConsole(out, errw, tty)
	// The command runs on its own goroutine so that the container's end can
	// cut it short while it waits for stdin; it then stops at its next read
	// or write, which fail once the server closes the connection.
	done := make(chan int32, 1)
	go func() { done <- runCommand(cmd, in, con) }()
	var code int32
	select {
	case code = <-done:
	case <-exited:
		code = exitSIGKILL
	case <-ctx.Done():
		return fmt.Errorf("exec in container %q: %w", containerID, ctx.Err())
	}
	if code != 0 {
		// containerd's execInternal words it so.
		return utilexec.CodeExitError{Err: fmt.Errorf("error executing command %v, exit code %d", cmd, code), Code: int(code)}
	}
	return nil
}

// runCommand runs one exec's command and returns its exit code.
func runCommand(cmd []string, in io.Reader, con *console) int32 {
	switch name := path.Base(cmd[0]); {
	case in != nil && isShell(name) && !slices.Contains(cmd[1:], "-c"):
		return runShell(name, in, con)
	case in != nil && name == "cat" && len(cmd) == 1:
		_, _ = io.Copy(con.stdout, in) // ends when the client closes stdin or goes away
		return 0
	default:
		stdout, stderr, code := interpret(cmd, 0)
		con.print(con.stdout, stdout)
		con.print(con.stderr, stderr)
		return code
	}
}

func isShell(name string) bool { return name == "sh" || name == "bash" || name == "ash" }

// runShell is an interactive shell reading commands from in, one a line.
func runShell(name string, in io.Reader, con *console) int32 {
	lines := &lineReader{in: bufio.NewReader(in)}
	if con.tty {
		lines.echo = con.stdout
	}
	var status int32
	for {
		if con.tty {
			con.print(con.stdout, shellPrompt)
		}
		line, err := lines.readLine()
		if err != nil {
			return status // end of stdin, or the client went away
		}
		words, ok := shellWords(line)
		switch {
		case !ok:
			con.print(con.stderr, name+": syntax error: unterminated quoted string\n")
			status = 2
			continue
		case len(words) == 0:
			continue
		case len(words) == 1 && path.Base(words[0]) == "exit":
			return status // a bare exit keeps the last command's status
		}
		stdout, stderr, code := interpret(words, 1) // depth 1: exit is a builtin
		con.print(con.stdout, stdout)
		con.print(con.stderr, stderr)
		status = code
		if path.Base(words[0]) == "exit" {
			return status
		}
	}
}

// console is an exec's stdio as the process sees it. Absent streams
// discard. With a TTY there is one output stream, and newlines are written
// as CRLF as a terminal in its default mode (ONLCR) does.
type console struct {
	stdout, stderr io.Writer
	tty            bool
}

func newConsole(out, errw io.Writer, tty bool) *console {
	c := &console{stdout: io.Discard, stderr: io.Discard, tty: tty}
	if out != nil {
		c.stdout = out
	}
	if errw != nil {
		c.stderr = errw
	}
	if tty {
		c.stderr = c.stdout
	}
	return c
}

// print writes s to w. A failed write means the client went away; the
// command notices when it next reads stdin, or ends anyway.
func (c *console) print(w io.Writer, s string) {
	if s == "" {
		return
	}
	if c.tty {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	_, _ = io.WriteString(w, s)
}

// lineReader reads a shell's input lines. Without a TTY a line ends at NL,
// or at the end of stdin. With a TTY it is a terminal's line discipline in
// canonical mode, as kubectl's raw local terminal relies on: CR ends a line
// as NL does (ICRNL), what is typed is echoed (ECHO), DEL or ^H erases a
// character, and ^D on an empty line is the end of input.
type lineReader struct {
	in   *bufio.Reader
	echo io.Writer // nil without a TTY
}

func (l *lineReader) readLine() (string, error) {
	if l.echo == nil {
		line, err := l.in.ReadString('\n')
		if err != nil && line == "" {
			return "", err
		}
		return line, nil // a last line without NL still runs
	}
	var line []byte
	for {
		b, err := l.in.ReadByte()
		if err != nil {
			if len(line) > 0 {
				return string(line), nil
			}
			return "", err
		}
		switch b {
		case '\r', '\n':
			_, _ = io.WriteString(l.echo, "\r\n")
			return string(line), nil
		case 0x04: // ^D
			if len(line) == 0 {
				return "", io.EOF
			}
		case 0x7f, '\b':
			if len(line) > 0 {
				_, size := utf8.DecodeLastRune(line)
				line = line[:len(line)-size]
				_, _ = io.WriteString(l.echo, "\b \b")
			}
		default:
			line = append(line, b)
			_, _ = l.echo.Write([]byte{b})
		}
	}
}

// closeStreams closes the streams that are there.
func closeStreams(ws ...io.WriteCloser) {
	for _, w := range ws {
		if w != nil {
			_ = w.Close()
		}
	}
}
