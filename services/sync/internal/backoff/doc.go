// Package backoff is sync's restart and image-pull back-off: the kubelet's
// CrashLoopBackOff and ImagePullBackOff, built on one per-key exponential
// back-off table (client-go's util/flowcontrol.Backoff, as the kubelet uses
// it).
//
// A key's delay starts at Config.Initial (10 s) and doubles on every Next up
// to Config.Max (5 min). A key whose last update is older than
// Config.ResetAfter (10 min, twice Max) when the next event comes starts
// over at Initial: a container that ran cleanly for ten minutes is not
// punished for an old crash loop. GC drops entries not updated for
// ResetAfter.
//
// Crash loops (crashloop.go): SyncPod calls DoBackOff before it restarts an
// exited container. While the container's last exit is younger than the
// key's delay, DoBackOff refuses with ErrCrashLoopBackOff and the message
//
//	back-off 20s restarting failed container=app pod=web_default(1234-uid)
//
// which SyncPod records as the container's waiting reason
// (state.waiting.reason "CrashLoopBackOff", message as above), exactly as
// the kubelet's doBackOff.
//
// Image pulls (imagepull.go): CheckImagePull before a pull refuses with
// ErrImagePullBackOff and `Back-off pulling image "busybox:1.36"` while the
// pod's image is backing off; ImagePullFailed after a failed pull advances
// the back-off and returns ErrImagePull with the runtime's error text. The
// container then shows waiting reason ErrImagePull right after a failure
// and ImagePullBackOff while the next attempt waits, as with the kubelet.
//
// Usage sketch (inside SyncPod):
//
//	crash := backoff.New(backoff.Config{}, nil) // one per sync process
//	if in, msg, err := crash.DoBackOff(pod, &spec, podStatus); in {
//		reasons.Update(pod.UID, spec.Name, err, msg) // CrashLoopBackOff
//		continue
//	}
//	// housekeeping: crash.GC()
package backoff
