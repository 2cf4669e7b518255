// Package admission is splitlet-sync's side of splitlet-admission: Client
// implements syncloop.BatchAdmitter over the AdmissionService (gRPC through
// connect-go, cleartext HTTP/2): Admit for one pod, AdmitPods for a run of
// new pods in one call. Active pods go by reference (UID and SHA-256 of
// their encoding), in full only the first time or when the server says it
// lost them (active_set.go), so a call carries some 50 bytes per active
// pod instead of its whole encoding, and an unchanged pod is never encoded
// again. Client.WatchEvictions hands the evictions the
// eviction manager decides to a syncloop.Evictor, and runs the node-level
// reclaim (dead containers, unused images) the manager asks for on the same
// stream before it evicts for disk pressure, answering with ReportReclaim;
// it reconnects with back-off whenever the stream breaks.
//
// Usage sketch:
//
//	c := admission.New("127.0.0.1:7444", admission.Options{Timeout: 2 * time.Second})
//	k := syncloop.New(syncloop.Options{Admitter: c, ...}, ...)
//	go c.WatchEvictions(ctx, k, admission.NodeGC{Containers: k, Images: imageGC})
//
// Admission never calls sync: sync asks (Admit), watches (WatchEvictions)
// and answers what it watched (ReportReclaim).
package admission
