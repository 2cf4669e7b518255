package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"go.uber.org/zap"
)

// config is what main reads from its flags.
type config struct {
	busybox  string
	standin  string
	registry string
	list     bool
}

type loggerKey struct{}

func withLogger(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

func loggerFrom(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*zap.Logger); ok {
		return l
	}
	return zap.NewNop()
}

// run builds the catalogue and pushes it, or only lists it.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if cfg.list {
		return writeList(out)
	}
	if cfg.standin == "" {
		return errors.New("-standin is required to build the nginx, httpd, nonewprivs and pause images")
	}
	bb, err := os.ReadFile(cfg.busybox)
	if err != nil {
		return fmt.Errorf("read busybox: %w", err)
	}
	applets, err := busyboxApplets(ctx, cfg.busybox)
	if err != nil {
		return err
	}
	standin, err := os.ReadFile(cfg.standin)
	if err != nil {
		return fmt.Errorf("read standin: %w", err)
	}
	images, err := buildCatalogue(inputs{busybox: bb, applets: applets, standin: standin})
	if err != nil {
		return err
	}
	client := &registryClient{
		base: "http://" + cfg.registry,
		http: &http.Client{Timeout: 2 * time.Minute},
	}
	log := loggerFrom(ctx)
	for _, img := range images {
		for _, ref := range img.refs {
			repo, tag, err := splitRef(ref)
			if err != nil {
				return err
			}
			digest, err := client.push(ctx, repo, tag, img.built)
			if err != nil {
				return fmt.Errorf("push %s: %w", ref, err)
			}
			log.Info("pushed", zap.String("ref", ref), zap.String("as", cfg.registry+"/"+repo+":"+tag), zap.String("digest", digest))
		}
	}
	return nil
}

// busyboxApplets asks busybox which applets it has; each becomes a symlink in the
// image, as in the upstream busybox image.
func busyboxApplets(ctx context.Context, path string) ([]string, error) {
	out, err := exec.CommandContext(ctx, path, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", path, err)
	}
	var applets []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" {
			applets = append(applets, a)
		}
	}
	if len(applets) == 0 {
		return nil, fmt.Errorf("%s --list printed no applets", path)
	}
	return applets, nil
}

// writeList prints one line per reference: "built REF" or "missing REF: reason".
func writeList(out io.Writer) error {
	for _, s := range catalogue() {
		for _, ref := range s.refs {
			if _, err := fmt.Fprintf(out, "built\t%s\t%s\n", ref, s.why); err != nil {
				return err
			}
		}
	}
	for _, u := range unbuildable {
		if _, err := fmt.Fprintf(out, "missing\t%s\t%s\n", u.ref, u.why); err != nil {
			return err
		}
	}
	return nil
}

// splitRef turns "registry.k8s.io/e2e-test-images/busybox:1.29-2" into the
// repository and tag a mirror is asked for: "e2e-test-images/busybox", "1.29-2".
func splitRef(ref string) (repo, tag string, err error) {
	host, rest, ok := strings.Cut(ref, "/")
	if !ok || !strings.Contains(host, ".") {
		return "", "", fmt.Errorf("reference %q has no registry host", ref)
	}
	if strings.Contains(rest, "@") {
		return "", "", fmt.Errorf("reference %q is pinned by digest; it cannot be rebuilt", ref)
	}
	repo, tag = rest, "latest"
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		repo, tag = rest[:i], rest[i+1:]
	}
	return repo, tag, nil
}
