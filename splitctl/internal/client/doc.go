// Package client is splitctl's side of the PodService API: where the server
// is (flag, environment, config file), a Connect client for it, the decoding
// of the google.protobuf.Struct pods and events into core/v1 objects, and the
// one place where Connect errors become kubectl-like messages.
package client
