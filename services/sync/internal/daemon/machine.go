package daemon

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// hostname is the machine's host name, which the Node reports as its
// Hostname address (the Node's own name may not resolve).
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.ToLower(h)
}

// systemInfo is the machine's part of the Node's status.nodeInfo, read as
// the kubelet's cadvisor reads it (MachineInfo, VersionInfo): the kernel
// release, /etc/os-release's PRETTY_NAME ("Linux" without one), the machine
// ID, the DMI product UUID, the boot ID and the swap capacity. What cannot
// be read stays empty.
func systemInfo() v1.NodeSystemInfo {
	firstLine := func(paths ...string) string {
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
		return ""
	}
	info := v1.NodeSystemInfo{
		MachineID:  firstLine("/etc/machine-id", "/var/lib/dbus/machine-id"),
		SystemUUID: firstLine("/sys/class/dmi/id/product_uuid"),
		BootID:     firstLine("/proc/sys/kernel/random/boot_id"),
		OSImage:    "Linux",
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		info.KernelVersion = unix.ByteSliceToString(u.Release[:])
	}
	info.Swap = nodeSwap("/proc/meminfo")
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				info.OSImage = strings.Trim(v, `"'`)
			}
		}
	}
	return info
}

// machineMemory reads MemTotal from /proc/meminfo in bytes; 0 when unknown.
func machineMemory() int64 { return meminfoBytes("/proc/meminfo", "MemTotal") }

// nodeSwap is the Node's status.nodeInfo.swap: the machine's swap capacity
// (SwapTotal in /proc/meminfo, as cadvisor's MachineInfo.SwapCapacity),
// nil without swap, as the kubelet's MachineInfo setter.
func nodeSwap(meminfo string) *v1.NodeSwapStatus {
	if swap := meminfoBytes(meminfo, "SwapTotal"); swap > 0 {
		return &v1.NodeSwapStatus{Capacity: &swap}
	}
	return nil
}

// meminfoBytes reads field key of a /proc/meminfo file in bytes; 0 when
// unknown.
func meminfoBytes(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == key+":" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}
