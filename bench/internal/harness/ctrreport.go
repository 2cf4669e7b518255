package harness

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

const ctrRowFormat = "%-8s %-10s %5s | %8s %8s %7s | %8s %8s %7s | %8s | %-14s | %s\n"

func printCtrHeader(w io.Writer, rep CtrReport) {
	fmt.Fprintf(w, "containerd comparison: %s, %d pods of %s, host network %t, %d rounds\n",
		rep.Runtime, rep.N, rep.Image, rep.HostNetwork, rep.Rounds)
	fmt.Fprintf(w, "  runtime-start: pod start -> ContainerStatus.started_at; running: -> RUNNING seen by the caller\n")
	fmt.Fprintf(w, "  (direct: ContainerStatus; splitlet: PodService.Watch); pod start: RunPodSandbox call / Apply call\n")
	fmt.Fprintf(w, ctrRowFormat, "side", "mode", "round", "rs-p50", "rs-max", "rs-wall", "run-p50", "run-max", "run-wall",
		"ret-p50", "load", "errors")
}

// printSideRun prints a run's row, then its CRI calls by method.
func printSideRun(w io.Writer, r SideRun) {
	ret := ""
	if r.StartReturned != nil {
		ret = f1(r.StartReturned.P50)
	}
	errs := ""
	if len(r.Errors) > 0 {
		errs = fmt.Sprintf("%d: %s", len(r.Errors), r.Errors[0])
	}
	fmt.Fprintf(w, ctrRowFormat, r.Side, r.Mode, fmt.Sprint(r.Round),
		f1(r.RuntimeStart.P50), f1(r.RuntimeStart.Max), f2(r.WallRuntimeStart),
		f1(r.Running.P50), f1(r.Running.Max), f2(r.WallRunning), ret, r.Load, errs)
	fmt.Fprintf(w, "    CRI calls (%s): %s\n", r.RPCSource, formatRPCs(r.RPCs))
	for _, e := range r.Errors[min(1, len(r.Errors)):] {
		fmt.Fprintf(w, "    error: %s\n", e)
	}
}

// formatRPCs lists methods by name as name×count@mean-ms.
func formatRPCs(rpcs map[string]RPCStat) string {
	names := make([]string, 0, len(rpcs))
	for m := range rpcs {
		names = append(names, m)
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, m := range names {
		s := rpcs[m]
		parts = append(parts, fmt.Sprintf("%s %dx%.1fms", m, s.Count, s.MeanMS))
	}
	return strings.Join(parts, ", ")
}

func printComparisons(w io.Writer, rep CtrReport) {
	fmt.Fprintf(w, "\nmedians over rounds (ms; wall in s) and splitlet/direct ratios:\n")
	fmt.Fprintf(w, "%-10s %-13s %6s | %8s %8s %7s | %8s %8s %7s | %6s %6s %6s\n",
		"mode", "metric", "rounds", "dir-p50", "dir-max", "dir-wall", "spl-p50", "spl-max", "spl-wall", "x-p50", "x-max", "x-wall")
	for _, c := range rep.Comparisons {
		fmt.Fprintf(w, "%-10s %-13s %6d | %8s %8s %7s | %8s %8s %7s | %6s %6s %6s\n",
			c.Mode, c.Metric, c.Rounds,
			f1(c.Direct.P50MS), f1(c.Direct.MaxMS), f2(c.Direct.WallSeconds),
			f1(c.Splitlet.P50MS), f1(c.Splitlet.MaxMS), f2(c.Splitlet.WallSeconds),
			f2(c.Ratio.P50MS), f2(c.Ratio.MaxMS), f2(c.Ratio.WallSeconds))
	}
}
