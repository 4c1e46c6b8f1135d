package boxconf

// GVisorLaunchArg selects tier 2's launcher after the init's argument on
// the airlock command line. The launcher runs on the host, as root,
// between the runner and runsc:
//
//	runner ──descriptor 3: []GVisorSource (JSON, then EOF)──▶ launcher
//	runner ──descriptors 4…: the pinned bind sources─────────▶ launcher
//	launcher: own mount namespace, binds each source at its Target,
//	          checks Dev/Ino, then execs runsc (argv after "--")
const GVisorLaunchArg = "gvisor-launch"

// GVisorSource is one pinned bind source of a tier-2 box: descriptor FD
// (an O_PATH descriptor of the inode airlock checked) is bound at Target,
// which must then be that inode, and made read-only when ReadOnly.
type GVisorSource struct {
	Target   string `json:"target"`
	FD       int    `json:"fd"`
	Dev      uint64 `json:"dev"`
	Ino      uint64 `json:"ino"`
	ReadOnly bool   `json:"ro"`
}
