package cm

import "math"

// CPU constants of the kubelet's helpers_linux.go and cm package.
const (
	MinShares      = 2
	MaxShares      = 262144
	sharesPerCPU   = 1024
	milliCPUToCPU  = 1000
	QuotaPeriod    = 100000 // the kubelet's default 100ms, in microseconds
	minQuotaPeriod = 1000
)

// MilliCPUToShares matches the kubelet's cm.MilliCPUToShares: zero means the
// kernel's minimum, not "unset".
func MilliCPUToShares(milliCPU int64) int64 {
	if milliCPU == 0 {
		return MinShares
	}
	shares := milliCPU * sharesPerCPU / milliCPUToCPU
	return min(max(shares, MinShares), MaxShares)
}

// MilliCPUToQuota matches the kubelet's: no limit means no quota, and a
// quota is at least 1ms.
func MilliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/milliCPUToCPU, minQuotaPeriod)
}

// SharesToMilliCPU matches the kubelet's cm.SharesToMilliCPU: the inverse
// of MilliCPUToShares, rounded up; below the minimum it is 0.
func SharesToMilliCPU(shares int64) int64 {
	if shares < MinShares {
		return 0
	}
	return int64(math.Ceil(float64(shares*milliCPUToCPU) / float64(sharesPerCPU)))
}

// QuotaToMilliCPU matches the kubelet's cm.QuotaToMilliCPU: no quota (-1)
// is 0.
func QuotaToMilliCPU(quota, period int64) int64 {
	if quota == -1 {
		return 0
	}
	return quota * milliCPUToCPU / period
}
