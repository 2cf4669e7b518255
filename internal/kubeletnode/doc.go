// Package kubeletnode runs a real kubelet (k8s.io/kubernetes ./cmd/kubelet,
// built by hack/lib/kube.sh) as a node of a control plane started by
// package cluster, so that the same tests and the Kubernetes e2e suite can
// be run against the kubelet and against splitlet and compared.
//
// Everything the kubelet writes lives under Config.Dir: its root directory
// (pods' volumes, plugin sockets, checkpoints), its pod logs, its
// configuration and its log. What it cannot keep there is
// set aside so that two kubelets, or a kubelet and a splitlet node, can share
// a machine: its pods' cgroups live under a cgroup root of its own
// (/kubelet-NODE, not /kubepods, where splitlet puts its pods and where the
// kubelet would kill every pod cgroup not its own), it listens on ports picked for it, and Node.Stop undoes what
// it leaves behind (mounts, links in /var/log/containers, the cgroup root,
// the kernel settings it changes at start).
//
// The caller provides the container runtime (a containerd with CNI, as
// hack/lib/containerd.sh starts it) and runs everything inside a network
// namespace of its own (hack/kubelet-e2e.sh): the node IP must be a
// non-loopback address on an interface, which the kubelet checks.
//
// Usage:
//
//	c, err := cluster.Start(ctx, cluster.Config{BinDir: kubeBin, Dir: cpDir})
//	kc, err := c.NodeKubeconfig("kubelet-a")
//	n, err := kubeletnode.Start(ctx, kubeletnode.Config{
//		KubeletBin:      filepath.Join(kubeBin, "kubelet"),
//		Dir:             dir,
//		NodeName:        "kubelet-a",
//		NodeIP:          "192.0.2.10", // on an interface of the namespace
//		Kubeconfig:      kc,
//		RuntimeEndpoint: "unix:///tmp/c/containerd.sock",
//		ClientCAFile:    c.CAFile,
//		TLSCertFile:     crt, // signed by the cluster CA, naming NodeIP
//		TLSKeyFile:      key,
//	})
//	defer n.Stop()
//	// then wait, through the API server, for Node kubelet-a to be Ready
package kubeletnode
