package conformance

import (
	"fmt"
	"io"
)

// PrintRun writes one run's figures and its failed and self-skipped specs.
func PrintRun(w io.Writer, node string, r Results) {
	fmt.Fprintf(w, "%s: %d specs run, %d passed, %d failed, %d skipped themselves\n",
		node, r.Count(Passed)+r.Count(Failed), r.Count(Passed), r.Count(Failed), r.Count(Skipped))
	printList(w, "failed on "+node, r.With(Failed))
	printList(w, "skipped themselves on "+node, r.With(Skipped))
}

// PrintComparison writes both runs' figures and the specs that pass on the
// kubelet and not on splitlet, and returns those.
func PrintComparison(w io.Writer, kubelet, splitlet Results) []string {
	for _, side := range []struct {
		name string
		r    Results
	}{{"kubelet", kubelet}, {"splitlet", splitlet}} {
		fmt.Fprintf(w, "%-8s %d specs run, %d passed, %d failed, %d skipped themselves\n", side.name,
			side.r.Count(Passed)+side.r.Count(Failed), side.r.Count(Passed), side.r.Count(Failed), side.r.Count(Skipped))
	}
	regressions := Regressions(kubelet, splitlet)
	printList(w, "passes on the kubelet, not on splitlet", regressions)
	printList(w, "passes on splitlet, not on the kubelet", Regressions(splitlet, kubelet))
	return regressions
}

func printList(w io.Writer, title string, names []string) {
	fmt.Fprintf(w, "\n%s (%d):\n", title, len(names))
	for _, n := range names {
		fmt.Fprintf(w, "  %s\n", n)
	}
}
