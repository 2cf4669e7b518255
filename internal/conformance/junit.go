package conformance

import (
	"encoding/xml"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Outcome is what became of one spec in a run.
type Outcome string

const (
	Passed  Outcome = "passed"
	Failed  Outcome = "failed"
	Skipped Outcome = "skipped" // the spec ran and skipped itself (e2eskipper), saying why
)

// Results maps a spec's full name ("[sig-node] Pods should ...") to its
// outcome. Specs the focus left out are not in it.
type Results map[string]Outcome

// junitSuites is the part of the e2e framework's junit_01.xml
// (test/e2e/framework/junit.WriteJUnitReport) read here.
type junitSuites struct {
	Suites []struct {
		Cases []struct {
			Name    string    `xml:"name,attr"`
			Status  string    `xml:"status,attr"`
			Skipped *junitMsg `xml:"skipped"`
			Failure *junitMsg `xml:"failure"`
			Error   *junitMsg `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitMsg struct {
	Message string `xml:"message,attr"`
}

// ReadJUnit reads the e2e framework's JUnit report. A spec the focus or
// skip filtered out is reported by ginkgo as skipped with the bare message
// "skipped" and is left out; the suite's own setup nodes
// ([SynchronizedBeforeSuite], [ReportAfterSuite] ...) are left out too.
func ReadJUnit(path string) (Results, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc junitSuites
	if err := xml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	res := Results{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			name, ok := strings.CutPrefix(c.Name, "[It] ")
			if !ok {
				continue // a suite-level node, not a spec
			}
			switch {
			case c.Failure != nil || c.Error != nil:
				res[name] = Failed
			case c.Skipped != nil:
				if c.Skipped.Message == "skipped" || c.Status == "pending" {
					continue // filtered out, never ran
				}
				res[name] = Skipped
			default:
				res[name] = Passed
			}
		}
	}
	return res, nil
}

// Count returns how many specs have outcome o.
func (r Results) Count(o Outcome) int {
	n := 0
	for _, got := range r {
		if got == o {
			n++
		}
	}
	return n
}

// With returns the sorted names of the specs with outcome o.
func (r Results) With(o Outcome) []string {
	var names []string
	for name, got := range r {
		if got == o {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Regressions returns the sorted specs that passed on the kubelet and did
// not pass on splitlet (failed, skipped, or never ran).
func Regressions(kubelet, splitlet Results) []string {
	var names []string
	for name, o := range kubelet {
		if o == Passed && splitlet[name] != Passed {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
