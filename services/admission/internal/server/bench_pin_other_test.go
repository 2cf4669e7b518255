//go:build !linux

package server

import "errors"

// Pinning a process to a CPU and reading a process tree's CPU time are
// Linux-only here; the pinned benchmarks skip elsewhere with this error.
var errPinUnsupported = errors.New("pinning to CPUs is implemented on Linux only")

func allowedCPUs() ([]int, error) { return nil, errPinUnsupported }

func pinProcess(int) error { return errPinUnsupported }

func processTreeUsage(int) (procUsage, procUsage, error) {
	return procUsage{}, procUsage{}, errPinUnsupported
}

func threadCPUs(int) (string, error) { return "", errPinUnsupported }
