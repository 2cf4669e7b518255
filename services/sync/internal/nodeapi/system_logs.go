package nodeapi

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/splitlet/splitlet/internal/logctx"
)

// The kubelet's node log query limits (kubelet_server_journal.go).
const (
	journalDateLayout = "2006-1-2 15:4:5"
	maxLogTailLines   = 100000
	maxServiceLength  = 256
	maxLogServices    = 4
	// logQueryTimeout bounds one query's journalctl runs and file copies,
	// as the kubelet's nodeLogQuery.Copy deadline.
	logQueryTimeout = 30 * time.Second
)

// unsafeServiceName matches what may not reach journalctl's --unit: the
// kubelet's reServiceNameUnsafeCharacters.
var unsafeServiceName = regexp.MustCompile(`[^a-zA-Z\-_.:0-9@]+`)

// systemLogHandler serves /logs/: the files under dir (the kubelet's
// /var/log/) through a file server, directory listings included, as the
// kubelet's logServer. With query (the kubelet's enableSystemLogQuery, off
// by default) it also answers node log queries (`/logs/?query=kubelet`,
// NodeLogQuery): services from journalctl when the journal knows them, else
// from dir/<service>, dir/<service>.log or dir/<service>/<service>.log, and
// one file named by a query holding a slash, relative to dir. A query that
// does not parse is 400; one that does not validate, or a query with a path
// after /logs/, 406.
func systemLogHandler(dir string, query bool) http.Handler {
	files := http.FileServer(http.Dir(dir))
	if !query {
		return http.StripPrefix(logsPath, files)
	}
	return http.StripPrefix(logsPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, errs := newNodeLogQuery(r.URL.Query())
		if len(errs) > 0 {
			http.Error(w, errs.ToAggregate().Error(), http.StatusBadRequest)
			return
		}
		if q == nil {
			files.ServeHTTP(w, r)
			return
		}
		if r.URL.Path != "/" && r.URL.Path != "" {
			http.Error(w, "path not allowed in query mode", http.StatusNotAcceptable)
			return
		}
		if errs := q.validate(dir); len(errs) > 0 {
			http.Error(w, errs.ToAggregate().Error(), http.StatusNotAcceptable)
			return
		}
		if len(q.services) > 0 {
			q.serveServices(w, r, dir)
			return
		}
		// validate allows one file and no services here.
		r.URL.Path = filepath.ToSlash(q.files[0])
		files.ServeHTTP(w, r)
	}))
}

// nodeLogQuery is a parsed /logs/ query: the kubelet's nodeLogQuery.
type nodeLogQuery struct {
	services []string
	files    []string
	logQueryOptions
}

// logQueryOptions are what a query may ask of journalctl; files take none.
type logQueryOptions struct {
	sinceTime, untilTime *time.Time
	tailLines, boot      *int
	pattern              string
}

// newNodeLogQuery parses the query's parameters: nil for a request without
// any (a plain file request), errors for values that do not parse. Matches
// the kubelet's newNodeLogQuery, messages included: a query value holding
// a slash or backslash names a file, any other non-blank one a service.
func newNodeLogQuery(values url.Values) (*nodeLogQuery, field.ErrorList) {
	var errs field.ErrorList
	var q nodeLogQuery
	queries, asked := values["query"]
	for _, v := range queries {
		switch {
		case strings.ContainsAny(v, `/\`):
			q.files = append(q.files, v)
		case strings.TrimSpace(v) != "":
			q.services = append(q.services, v)
		}
	}
	if asked && len(q.files) == 0 && len(q.services) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("query"), queries, "may not be empty"))
	}
	parseTime := func(name string) *time.Time {
		v := values.Get(name)
		if v == "" {
			return nil
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(name), v, "invalid time format"))
			return nil
		}
		return &t
	}
	parseInt := func(name string) *int {
		v := values.Get(name)
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(name), v, err.Error()))
			return nil
		}
		return &n
	}
	q.sinceTime = parseTime("sinceTime")
	q.untilTime = parseTime("untilTime")
	q.boot = parseInt("boot")
	q.tailLines = parseInt("tailLines")
	q.pattern = values.Get("pattern")
	if len(errs) > 0 {
		return nil, errs
	}
	if reflect.DeepEqual(q, nodeLogQuery{}) {
		return nil, nil
	}
	return &q, nil
}

// validate checks the query against dir as the kubelet's
// nodeLogQuery.validate does: at most four safe service names, or exactly
// one file that exists below dir (resolved inside it: a name that climbs
// out of dir, or an absolute one, does not validate), never both, and
// options only with services.
func (q *nodeLogQuery) validate(dir string) field.ErrorList {
	var errs field.ErrorList
	for _, s := range q.services {
		switch {
		case len(s) > maxServiceLength:
			errs = append(errs, field.Invalid(field.NewPath("query"), s, "length must be less than 100"))
		case unsafeServiceName.MatchString(s):
			errs = append(errs, field.Invalid(field.NewPath("query"), s, "input contains unsupported characters"))
		}
	}
	if len(q.services) > maxLogServices {
		errs = append(errs, field.TooMany(field.NewPath("query"), len(q.services), maxLogServices))
	}
	switch {
	case len(q.files) == 0 && len(q.services) == 0:
		errs = append(errs, field.Required(field.NewPath("query"), "cannot be empty with options"))
	case len(q.files) > 0 && len(q.services) > 0:
		errs = append(errs, field.Invalid(field.NewPath("query"), fmt.Sprintf("%v, %v", q.files, q.services),
			"cannot specify a file and service"))
	case len(q.files) > 1:
		errs = append(errs, field.Invalid(field.NewPath("query"), q.files, "cannot specify more than one file"))
	case len(q.files) == 1 && q.logQueryOptions != (logQueryOptions{}):
		errs = append(errs, field.Invalid(field.NewPath("query"), q.files, "cannot specify file with options"))
	case len(q.files) == 1:
		if root, err := os.OpenRoot(dir); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("query"), q.files, err.Error()))
		} else {
			defer func() { _ = root.Close() }()
			if _, err := root.Stat(q.files[0]); err != nil {
				errs = append(errs, field.Invalid(field.NewPath("query"), q.files, err.Error()))
			}
		}
	}
	if q.sinceTime != nil && q.untilTime != nil && q.sinceTime.After(*q.untilTime) {
		errs = append(errs, field.Invalid(field.NewPath("untilTime"), q.untilTime, "must be after `sinceTime`"))
	}
	if q.boot != nil && *q.boot > 0 {
		errs = append(errs, field.Invalid(field.NewPath("boot"), *q.boot, "must be less than 1"))
	}
	if q.tailLines != nil {
		if msgs := utilvalidation.IsInRange(*q.tailLines, 0, maxLogTailLines); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("tailLines"), *q.tailLines, msgs[0]))
		}
	}
	if _, err := syntax.Parse(q.pattern, syntax.Perl); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("pattern"), q.pattern, err.Error()))
	}
	return errs
}

// serveServices writes the services' logs as plain text, gzipped when the
// client asks for exactly gzip, as the kubelet's journalServer. Failures
// after the header is written become a line of the output, as there.
func (q *nodeLogQuery) serveServices(w http.ResponseWriter, r *http.Request, dir string) {
	var out io.Writer = w
	w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
	if r.Header.Get("Accept-Encoding") == "gzip" {
		w.Header().Set("Content-Encoding", "gzip")
		gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
		if err != nil {
			fmt.Fprintf(w, "\nfailed to get gzip writer: %v\n", err)
			return
		}
		defer func() {
			if err := gz.Close(); err != nil {
				logctx.From(r.Context()).Info("finishing the gzipped log failed", zap.Error(err))
			}
		}()
		out = gz
	}
	ctx, cancel := context.WithTimeout(r.Context(), logQueryTimeout)
	defer cancel()
	q.copy(ctx, out, dir)
}

// copy writes each service's log: from journalctl for those the journal
// knows, else from their files under dir, where options cannot apply.
// Matches the kubelet's nodeLogQuery.copyForBoot.
func (q *nodeLogQuery) copy(ctx context.Context, w io.Writer, dir string) {
	var journaled, fileLogged []string
	for _, s := range q.services {
		if inJournal(ctx, s) {
			journaled = append(journaled, s)
		} else {
			fileLogged = append(fileLogged, s)
		}
	}
	if len(journaled) > 0 {
		q.copyJournal(ctx, w, journaled)
	}
	if len(fileLogged) == 0 {
		return
	}
	if q.logQueryOptions != (logQueryOptions{}) {
		fmt.Fprintf(w, "\noptions present and query resolved to log files for %v\ntry without specifying options\n", fileLogged)
		return
	}
	for _, s := range fileLogged {
		if ctx.Err() != nil {
			fmt.Fprintf(w, "\ncontext error: %v\n", ctx.Err())
			return
		}
		copyServiceFile(ctx, w, dir, s)
	}
}

// inJournal reports whether journald holds logs of the unit service.service
// (the kubelet's checkForNativeLogger); no journalctl is no.
func inJournal(ctx context.Context, service string) bool {
	out, err := exec.CommandContext(ctx, "journalctl", "--field", "_SYSTEMD_UNIT").CombinedOutput()
	return err == nil && strings.Contains(string(out), service+".service")
}

// journalArgs are journalctl's arguments for the query and services: the
// kubelet's getLoggingCmd on Linux.
func (q *nodeLogQuery) journalArgs(services []string) []string {
	args := []string{"--utc", "--no-pager", "--output=short-precise"}
	if q.sinceTime != nil {
		args = append(args, "--since="+q.sinceTime.Format(journalDateLayout))
	}
	if q.untilTime != nil {
		args = append(args, "--until="+q.untilTime.Format(journalDateLayout))
	}
	if q.tailLines != nil {
		args = append(args, "--pager-end", fmt.Sprintf("--lines=%d", *q.tailLines))
	}
	for _, s := range services {
		args = append(args, "--unit="+s)
	}
	if q.pattern != "" {
		args = append(args, "--grep="+q.pattern)
	}
	if q.boot != nil {
		args = append(args, "--boot", strconv.Itoa(*q.boot))
	}
	return args
}

// copyJournal runs journalctl for services into w; journalctl's own
// failures are in its output, and one that cannot run is a line saying so.
func (q *nodeLogQuery) copyJournal(ctx context.Context, w io.Writer, services []string) {
	cmd := exec.CommandContext(ctx, "journalctl", q.journalArgs(services)...)
	cmd.Stdout, cmd.Stderr = w, w
	var exit *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &exit) && (q.boot == nil || *q.boot == 0) {
		fmt.Fprintf(w, "\nerror: journal output not available\n")
	}
}

// copyServiceFile writes the first of dir/<service>, dir/<service>.log and
// dir/<service>/<service>.log that is a file, opened inside dir, or a line
// saying none is (the kubelet's heuristicsCopyFileLogs).
func copyServiceFile(ctx context.Context, w io.Writer, dir, service string) {
	var err error
	for _, name := range []string{service, service + ".log", service + "/" + service + ".log"} {
		if err = copyLogFile(ctx, w, dir, name); !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(w, "\nlog not found for %s\n", service)
	case err != nil:
		fmt.Fprintf(w, "\nerror getting log for %s: %v\n", service, err)
	}
}

// copyLogFile copies dir/name into w until ctx ends; a directory counts as
// missing.
func copyLogFile(ctx context.Context, w io.Writer, dir, name string) error {
	f, err := os.OpenInRoot(dir, name)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return os.ErrNotExist
	}
	_, err = io.Copy(w, ctxReader{ctx: ctx, r: f})
	return err
}

// ctxReader stops reading once its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
