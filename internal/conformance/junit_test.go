package conformance

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A report as ginkgo v2 writes it for the e2e framework: specs the focus
// left out are "skipped" with the bare message, a spec that skipped itself
// says why, suite nodes carry their own brackets.
const report = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="6" disabled="0" errors="0" failures="1" time="12.5">
  <testsuite name="Kubernetes e2e suite" package="/e2e" tests="6">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1"></testcase>
    <testcase name="[It] [sig-node] Pods should get a host IP [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" status="passed" time="3"></testcase>
    <testcase name="[It] [sig-node] Container Runtime should report termination message [NodeConformance]" classname="Kubernetes e2e suite" status="failed" time="5">
      <failure type="failed">expected "DONE" got ""</failure>
    </testcase>
    <testcase name="[It] [sig-node] Sysctls should reject invalid sysctls [MinimumKubeletVersion:1.21]" classname="Kubernetes e2e suite" status="panicked" time="1">
      <error type="panicked">boom</error>
    </testcase>
    <testcase name="[It] [sig-storage] EmptyDir volumes pod should support memory backed volumes of specified size" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped - Only supported for providers [gce]"></skipped>
    </testcase>
    <testcase name="[It] [sig-apps] Deployment should run the lifecycle of a Deployment [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[ReportAfterSuite] Kubernetes e2e JUnit report" classname="Kubernetes e2e suite" status="passed" time="0"></testcase>
  </testsuite>
</testsuites>`

func TestReadJUnit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit_01.xml")
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := ReadJUnit(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Results{
		"[sig-node] Pods should get a host IP [NodeConformance] [Conformance]":                      Passed,
		"[sig-node] Container Runtime should report termination message [NodeConformance]":          Failed,
		"[sig-node] Sysctls should reject invalid sysctls [MinimumKubeletVersion:1.21]":             Failed,
		"[sig-storage] EmptyDir volumes pod should support memory backed volumes of specified size": Skipped,
	}
	if len(res) != len(want) {
		t.Errorf("got %d specs, want %d: %v", len(res), len(want), res)
	}
	for name, o := range want {
		if res[name] != o {
			t.Errorf("%s: %q, want %q", name, res[name], o)
		}
	}
	if res.Count(Failed) != 2 || res.Count(Passed) != 1 {
		t.Errorf("counts: %d failed, %d passed; want 2 and 1", res.Count(Failed), res.Count(Passed))
	}
}

func TestReadJUnitRejectsGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit_01.xml")
	if err := os.WriteFile(path, []byte("<testsuites><testsuite>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJUnit(path); err == nil {
		t.Fatal("a truncated report was read without error")
	}
}

func TestRegressions(t *testing.T) {
	kubelet := Results{"a": Passed, "b": Passed, "c": Failed, "d": Passed, "e": Skipped}
	splitlet := Results{"a": Passed, "b": Failed, "c": Failed, "e": Passed}
	// b fails, d never ran on splitlet; c fails on both, e is not a kubelet pass.
	if got, want := Regressions(kubelet, splitlet), []string{"b", "d"}; !slices.Equal(got, want) {
		t.Errorf("Regressions = %q, want %q", got, want)
	}
}
