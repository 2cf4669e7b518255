// Command testplugin is an admission plugin for pluginhost's tests whose
// behaviour is chosen by SPLITLET_TESTPLUGIN_MODE:
//
//	admit  (default) admit every pod
//	reject reject every pod with reason TestRejected
//	exit   exit at once with status 3, before the handshake
//	crash  exit with status 2 inside Admit, mid-call
//	hang   sleep SPLITLET_TESTPLUGIN_SLEEP (default 1m) inside Admit,
//	       ignoring the deadline, like a stuck plugin
//	echo   reject every pod with reason Echo and the active pods it was
//	       handed as the message (name@resourceVersion, sorted)
//	oldsdk echo, served as a plugin built on the SDK from before active
//	       sets served it: whole sets only, nothing declared in Describe
//
// Describe's version says whether the host set up AutoMTLS.
package main

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
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

func (t *testPlugin) Admit(_ context.Context, r *plugin.Request) (*plugin.Response, error) {
	switch t.mode {
	case "reject":
		return &plugin.Response{Reason: "TestRejected", Message: "rejected by the test plugin"}, nil
	case "crash":
		os.Exit(2)
	case "hang":
		time.Sleep(t.sleep)
	case "echo":
		return &plugin.Response{Reason: "Echo", Message: names(r.ActivePods)}, nil
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
	switch t.mode {
	case "exit":
		os.Exit(3)
	case "oldsdk":
		serveOldSDK()
		return
	}
	plugin.Serve(t)
}

func names(pods []*v1.Pod) string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name + "@" + p.ResourceVersion
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// serveOldSDK serves oldServer the way plugin.Serve did before active
// sets: same handshake and plugin name, its own AdmissionPluginService.
func serveOldSDK() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: plugin.Handshake,
		Plugins:         map[string]goplugin.Plugin{plugin.PluginName: oldPlugin{}},
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}

type oldPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (oldPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterAdmissionPluginServiceServer(s, oldServer{})
	return nil
}

func (oldPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	panic("the plugin side has no client")
}

// oldServer reads what the SDK's server read before active sets: pod,
// active_pods and node; it knows no other field.
type oldServer struct {
	pluginv1.UnimplementedAdmissionPluginServiceServer
}

func (oldServer) Admit(_ context.Context, in *pluginv1.AdmitRequest) (*pluginv1.AdmitResponse, error) {
	pods := make([]*v1.Pod, len(in.GetActivePods()))
	for i, b := range in.GetActivePods() {
		pods[i] = &v1.Pod{}
		if err := pods[i].Unmarshal(b); err != nil {
			return nil, err
		}
	}
	return &pluginv1.AdmitResponse{Reason: "Echo", Message: names(pods)}, nil
}

func (oldServer) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	return &pluginv1.DescribeResponse{Name: "testplugin-oldsdk", Version: "v0.1.0"}, nil
}
