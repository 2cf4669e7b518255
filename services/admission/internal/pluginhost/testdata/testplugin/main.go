// Command testplugin is an admission plugin for pluginhost's tests whose
// behaviour is chosen by SPLITLET_TESTPLUGIN_MODE:
//
//	admit  (default) admit every pod
//	reject reject every pod with reason TestRejected
//	exit   exit at once with status 3, before the handshake
//	crash  exit with status 2 inside Admit, mid-call
//	hang   sleep SPLITLET_TESTPLUGIN_SLEEP (default 1m) inside Admit,
//	       ignoring the deadline, like a stuck plugin
//
// Describe's version says whether the host set up AutoMTLS.
package main

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/splitlet/splitlet/services/admission/plugin"
)

type testPlugin struct {
	mode  string
	sleep time.Duration
}

var (
	_ plugin.AdmissionPlugin = (*testPlugin)(nil)
	_ plugin.Describer       = (*testPlugin)(nil)
)

func (t *testPlugin) Admit(_ context.Context, _ *plugin.Request) (*plugin.Response, error) {
	switch t.mode {
	case "reject":
		return &plugin.Response{Reason: "TestRejected", Message: "rejected by the test plugin"}, nil
	case "crash":
		os.Exit(2)
	case "hang":
		time.Sleep(t.sleep)
	}
	return &plugin.Response{Admit: true}, nil
}

func (t *testPlugin) Describe(context.Context) (plugin.Info, error) {
	// The version reports whether the host offered AutoMTLS: go-plugin
	// hands the plugin the host's certificate in PLUGIN_CLIENT_CERT.
	return plugin.Info{Name: "testplugin-" + t.mode, Version: "mtls=" + strconv.FormatBool(os.Getenv("PLUGIN_CLIENT_CERT") != "")}, nil
}

func main() {
	t := &testPlugin{mode: os.Getenv("SPLITLET_TESTPLUGIN_MODE"), sleep: time.Minute}
	if d, err := time.ParseDuration(os.Getenv("SPLITLET_TESTPLUGIN_SLEEP")); err == nil {
		t.sleep = d
	}
	if t.mode == "exit" {
		os.Exit(3)
	}
	plugin.Serve(t)
}
