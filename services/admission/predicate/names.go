package predicate

// Predicate names and reason texts of the scheduler plugins the kubelet runs;
// a rejection's Reason is the name and its Message is
// "Predicate <name> failed: <text>".
const (
	NodeAffinityName         = "NodeAffinity"
	ErrReasonNodeAffinity    = "node(s) didn't match Pod's node affinity/selector"
	NodeNameName             = "NodeName"
	ErrReasonNodeName        = "node(s) didn't match the requested node name"
	NodePortsName            = "NodePorts"
	ErrReasonNodePorts       = "node(s) didn't have free ports for the requested pod ports"
	TaintTolerationName      = "TaintToleration"
	ErrReasonTaintToleration = "node(s) had taints that the pod didn't tolerate"
)
