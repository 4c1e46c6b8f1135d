package jobs

// QueryPlacement is the job workflow's query of where the job runs: the
// node whose claim the workflow accepted, and whether that node's run is
// going on now. The server asks it before it lets a node read or keep a
// job's files: the workflow, not the node, says which node runs a job.
const QueryPlacement = "airlock.placement"

// Placement is the answer to QueryPlacement. The zero Placement is a job
// no node runs: not claimed yet, or ended.
type Placement struct {
	// Node is the node whose claim the workflow accepted last ("" before
	// any claim).
	Node string `json:"node"`
	// Running says Node's run of the job is going on now.
	Running bool `json:"running"`
}

// RunsOn says whether node runs the job now.
func (p Placement) RunsOn(node string) bool { return p.Running && node != "" && p.Node == node }
