// Package logs reads containers' CRI log files for PodService.Logs, the way
// the kubelet serves `kubectl logs` (pkg/kubelet/kuberuntime/logs.ReadLogs).
//
// The runtime (containerd's CRI plugin, or the gateway's fake backend) writes
// each container instance's output to
// <root>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log, one line per
// write:
//
//	2016-10-06T00:17:09.669794202Z stdout P first half of a long line
//	2016-10-06T00:17:09.669794203Z stdout F second half
//	2016-10-06T00:17:10.113242941Z stderr F a whole line
//
// (timestamp, stream, tag, content; tag P marks a partial line the runtime
// split, F the full line or the last piece of one). ReadLogs parses that,
// joins the P pieces of a stream with the F that ends them, and writes each
// line to the stdout or stderr writer, with the options of PodLogOptions:
// tail (counted in joined lines and found by reading the file backwards), a
// since time, a byte limit, an RFC3339Nano timestamp prefix, and follow.
//
// Follow waits for writes with fsnotify on the log's directory and a
// one-second poll as a safety net, survives the file being rotated (renamed
// and recreated, or truncated in place) by draining the old file before
// reopening the path, and ends when ctx is done or when
// Options.ContainerExited reports the container stopped and the file has been
// read to its end.
//
// Usage sketch:
//
//	path := logs.LogPath(logs.PodLogDir("/var/log/pods", ns, name, uid), "app", restarts)
//	err := logs.ReadLogs(ctx, path, logs.Options{Follow: true, ContainerExited: exited}, w, w)
package logs
