// Command mkimage builds the small container images splitlet's tests run, from
// files on this machine, because no registry is reachable from CI.
//
// It writes an OCI image layout tarball that `ctr -n k8s.io images import`
// accepts (the index names each image with io.containerd.image.name), and it
// can push the same image to a plain-HTTP registry for critest.
//
//	mkimage -ref docker.io/library/busybox:1.36 -ref docker.io/library/busybox:latest \
//	    -busybox /bin/busybox -cmd sh -o busybox.tar
//	mkimage -ref registry.k8s.io/pause:3.10 -file bin/pause:/pause -entrypoint /pause -o pause.tar
//	mkimage -ref localhost:5000/busybox:1.36 -busybox /bin/busybox -push localhost:5000/busybox:1.36
//	mkimage -ref registry.k8s.io/e2e-test-images/nonroot:1.5 -busybox /bin/busybox -user 1234 -o nonroot.tar
package main

import (
	"flag"
	"fmt"
	"os"
	"path"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

// run parses the command line, builds the image and writes or pushes it.
func run(args []string) error {
	spec, out, pushes, err := parseFlags(args)
	if err != nil {
		return err
	}
	if out == "" && len(pushes) == 0 {
		return fmt.Errorf("nothing to do: give -o FILE and/or -push REF (or -push-registry with -ref)")
	}
	img, err := buildImage(spec)
	if err != nil {
		return err
	}
	if out != "" {
		if err := writeLayoutTar(out, img, spec.Refs); err != nil {
			return err
		}
	}
	for _, ref := range pushes {
		if err := push(ref, img); err != nil {
			return err
		}
	}
	return nil
}

// parseFlags turns the command line into an image spec and its destinations.
func parseFlags(args []string) (spec imageSpec, out string, pushes []string, err error) {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	var refs, files, envs, pushList, dirs, links repeated
	var entrypoint, cmd string
	fs.Var(&refs, "ref", "full image name written into the index, e.g. docker.io/library/busybox:1.36 (repeatable: one index entry per name)")
	fs.StringVar(&spec.Busybox, "busybox", "", "path of a static busybox to install at /bin/busybox, with a /bin symlink per applet from `busybox --list`")
	fs.Var(&files, "file", "SRC:DST[:MODE] copies the file SRC into the image at DST with the octal MODE (4755: setuid), else the source's permissions (repeatable)")
	fs.StringVar(&entrypoint, "entrypoint", "", `entrypoint as a JSON array ("[\"/pause\"]") or a comma list (/pause)`)
	fs.StringVar(&cmd, "cmd", "", `default command as a JSON array or a comma list (sh)`)
	fs.Var(&envs, "env", "KEY=VALUE added to the image config (repeatable); PATH has a default")
	fs.StringVar(&spec.User, "user", "", "the image config's User, as a Dockerfile's USER (1234, 1234:50000)")
	fs.Var(&dirs, "dir", "an empty directory to create in the image, absolute (repeatable)")
	fs.Var(&links, "symlink", "PATH:TARGET adds a symlink at PATH pointing to TARGET (repeatable)")
	fs.StringVar(&out, "o", "", "write an OCI image layout tarball to this file")
	fs.Var(&pushList, "push", "HOST:PORT/REPO:TAG of a plain-HTTP registry to push the image to (repeatable)")
	var pushRegistry string
	fs.StringVar(&pushRegistry, "push-registry", "", "HOST:PORT of a plain-HTTP registry to push the image to under each -ref's repository and tag (registry.k8s.io/pause:3.10 -> HOST:PORT/pause:3.10), as a KUBE_TEST_REPO_LIST maps the e2e suite's images")
	if err := fs.Parse(args); err != nil {
		return spec, "", nil, err
	}
	if fs.NArg() > 0 {
		return spec, "", nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if len(refs) == 0 && out != "" {
		return spec, "", nil, fmt.Errorf("-o needs at least one -ref to name the image")
	}
	spec.Refs = refs
	if pushRegistry != "" {
		rehosted, err := rehost(refs, pushRegistry)
		if err != nil {
			return spec, "", nil, err
		}
		pushList = append(pushList, rehosted...)
	}
	spec.Env = envs
	for _, f := range files {
		fc, err := parseFileFlag(f)
		if err != nil {
			return spec, "", nil, err
		}
		spec.Files = append(spec.Files, fc)
	}
	for _, d := range dirs {
		if !path.IsAbs(d) {
			return spec, "", nil, fmt.Errorf("-dir %q: must be an absolute path in the image", d)
		}
		spec.Dirs = append(spec.Dirs, path.Clean(d))
	}
	for _, l := range links {
		p, target, ok := strings.Cut(l, ":")
		if !ok || !path.IsAbs(p) || target == "" {
			return spec, "", nil, fmt.Errorf("-symlink %q: want PATH:TARGET with an absolute PATH", l)
		}
		spec.Symlinks = append(spec.Symlinks, link{Path: path.Clean(p), Target: target})
	}
	if spec.Entrypoint, err = parseList(entrypoint); err != nil {
		return spec, "", nil, fmt.Errorf("-entrypoint: %w", err)
	}
	if spec.Cmd, err = parseList(cmd); err != nil {
		return spec, "", nil, fmt.Errorf("-cmd: %w", err)
	}
	return spec, out, pushList, nil
}
