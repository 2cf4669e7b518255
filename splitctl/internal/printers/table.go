package printers

import (
	"io"
	"strings"
	"text/tabwriter"
)

// NewTabWriter returns a tabwriter set up as kubectl's printers.GetNewTabWriter.
func NewTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 10, 4, 3, ' ', 0)
}

// TableOptions says which optional columns a pod table has.
type TableOptions struct {
	// WithNamespace adds the NAMESPACE column (get -A).
	WithNamespace bool
	// Wide adds IP, NODE, NOMINATED NODE and READINESS GATES (-o wide).
	Wide bool
}

// PodTableHeader is the header line's cells for opts.
func PodTableHeader(opts TableOptions) []string {
	h := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if opts.WithNamespace {
		h = append([]string{"NAMESPACE"}, h...)
	}
	if opts.Wide {
		h = append(h, "IP", "NODE", "NOMINATED NODE", "READINESS GATES")
	}
	return h
}

// Cells is the row's cells for opts, in header order.
func (r PodRow) Cells(opts TableOptions) []string {
	c := []string{r.Name, r.Ready, r.Status, r.Restarts, r.Age}
	if opts.WithNamespace {
		c = append([]string{r.Namespace}, c...)
	}
	if opts.Wide {
		c = append(c, r.IP, r.Node, r.NominatedNode, r.ReadinessGates)
	}
	return c
}

// WriteRow writes cells as one tab-separated line.
func WriteRow(w io.Writer, cells []string) error {
	_, err := io.WriteString(w, strings.Join(cells, "\t")+"\n")
	return err
}
