// Package cluster runs a Kubernetes control plane on this machine for
// splitlet's cluster tests and `make cluster`: etcd (Debian's etcd-server),
// kube-apiserver with its default admission plugins (ServiceAccount among
// them) plus NodeRestriction (off by default; kubeadm turns it on) and
// --authorization-mode=Node,RBAC,
// kube-controller-manager (every default controller, service-account
// tokens signed with the cluster's key, CSR signing with the cluster CA,
// node IPAM) and kube-scheduler, each on a free loopback port, with a
// cluster CA and client certificates it generates.
//
// The components are built from the Go module proxy by hack/lib/kube.sh;
// the caller runs the cluster inside a network namespace of its own
// (`unshare --net`, `ip netns`) so that nothing it serves is reachable from
// elsewhere. Processes are started with package stack's StartProcess: one
// log per process under Dir/log, a pid file each (StopDetached).
//
// Usage:
//
//	c, err := cluster.Start(ctx, cluster.Config{BinDir: kubeBin, Dir: dir})
//	defer c.Stop()
//	kc, err := c.NodeKubeconfig("node-a") // system:node:node-a in system:nodes
//	// splitlet-sync --kubeconfig=kc --node-name=node-a ...
//	// kubectl --kubeconfig=c.AdminKubeconfig get nodes
package cluster
