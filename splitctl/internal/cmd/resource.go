package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// isPodResource reports whether s names the pods resource the way kubectl
// accepts it (plural, singular, short name).
func isPodResource(s string) bool {
	switch strings.ToLower(s) {
	case "pods", "pod", "po":
		return true
	}
	return false
}

// podNames turns kubectl-style arguments into pod names: "pods a b",
// "pod/a pod/b", or (for commands that take only pods) bare "a".
// It reports whether a resource type was given at all.
func podNames(cmd *cobra.Command, args []string, bareNamesAllowed bool) ([]string, bool, error) {
	if len(args) == 0 {
		return nil, false, nil
	}
	if !strings.Contains(args[0], "/") {
		if isPodResource(args[0]) {
			return args[1:], true, nil
		}
		if bareNamesAllowed {
			return args, true, nil
		}
		return nil, false, fmt.Errorf("the server doesn't have a resource type %q", args[0])
	}
	var names []string
	for _, a := range args {
		res, name, ok := strings.Cut(a, "/")
		if !ok {
			return nil, false, usageError(cmd, "there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. '%s get resource/<resource_name>' instead of '%s get resource resource/<resource_name>'", cmd.Root().Name(), cmd.Root().Name())
		}
		if !isPodResource(res) {
			return nil, false, fmt.Errorf("the server doesn't have a resource type %q", res)
		}
		if name == "" {
			return nil, false, fmt.Errorf("arguments in resource/name form must have a single resource and name")
		}
		names = append(names, name)
	}
	return names, true, nil
}

// onePod is for commands taking a single pod ("NAME" or "pod/NAME").
func onePod(cmd *cobra.Command, arg string) (string, error) {
	if res, name, ok := strings.Cut(arg, "/"); ok {
		if !isPodResource(res) {
			return "", fmt.Errorf("the server doesn't have a resource type %q", res)
		}
		if name == "" {
			return "", usageError(cmd, "a pod name is required")
		}
		return name, nil
	}
	return arg, nil
}
