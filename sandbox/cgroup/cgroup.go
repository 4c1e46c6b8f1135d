// Package cgroup puts a box's whole process tree under resource limits —
// memory, CPU and number of tasks — with the host's control groups, version
// 1 (one hierarchy per controller) or version 2 (the unified hierarchy), and
// kills everything in a group when the box ends.
//
// Groups are made under airlock's own cgroup in each hierarchy, never at a
// hierarchy's root, so a box stays inside whatever budget airlock itself runs
// under. A limit that cannot be applied is an error, never skipped.
//
// The package is imported by the runner (which starts the box's first process
// inside the group with Group.Start), by the sandbox probe (Detect) and by the
// escape matrix.
package cgroup

import (
	"fmt"
	"math"
	"time"

	"github.com/airlock-run/airlock/errs"
)

// Limits bound a group. A zero field means no limit of that kind.
type Limits struct {
	// MemoryBytes caps the memory (and, where swap is accounted, memory plus
	// swap) of every process in the group together; beyond it the kernel's
	// OOM killer ends a process of the group.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// CPU is the number of cores the group may use together, enforced as a
	// CFS quota per 100 ms period (0.5 = 50 ms of CPU time every 100 ms).
	CPU float64 `json:"cpu,omitempty"`
	// Pids caps the tasks (processes and threads) alive in the group at
	// once; a fork beyond it fails with EAGAIN.
	Pids int `json:"pids,omitempty"`
}

// Minimums below which a limit would not let any program start; asking for
// less is an error rather than a box that cannot run.
const (
	MinMemoryBytes = 1 << 20
	MinCPU         = 0.01 // 1 ms per 100 ms period, the kernel's smallest quota
	cpuPeriodUS    = 100000
)

// Validate reports the first field of l that cannot be applied as given.
func (l Limits) Validate() error {
	switch {
	case l.MemoryBytes < 0:
		return errs.Invalidf("limits.memory: %d bytes is negative", l.MemoryBytes)
	case l.MemoryBytes > 0 && l.MemoryBytes < MinMemoryBytes:
		return errs.Invalidf("limits.memory: %d bytes is below the minimum of %d (1 MiB)", l.MemoryBytes, MinMemoryBytes)
	case math.IsNaN(l.CPU) || math.IsInf(l.CPU, 0) || l.CPU < 0:
		return errs.Invalidf("limits.cpu: %v is not a number of cores", l.CPU)
	case l.CPU > 0 && l.CPU < MinCPU:
		return errs.Invalidf("limits.cpu: %v cores is below the minimum of %v", l.CPU, MinCPU)
	case l.CPU > 1e6:
		return errs.Invalidf("limits.cpu: %v cores is more than any host has", l.CPU)
	case l.Pids < 0:
		return errs.Invalidf("limits.pids: %d is negative", l.Pids)
	}
	return nil
}

// cpuQuotaUS is the CFS quota for l.CPU cores per cpuPeriodUS.
func (l Limits) cpuQuotaUS() int64 { return int64(math.Round(l.CPU * cpuPeriodUS)) }

// Controller names, as the kernel spells them.
const (
	Memory  = "memory"
	CPU     = "cpu"
	Pids    = "pids"
	Freezer = "freezer" // v1 only: stops a group so Kill races no fork
	CPUAcct = "cpuacct" // v1 only: CPU time used, for Stats
)

// Info is what the host's control groups offer airlock.
type Info struct {
	// Version is 1 or 2; 0 when no hierarchy is usable.
	Version int `json:"version"`
	// Controllers are the usable controllers of that version, of those
	// airlock uses (memory, cpu, pids; freezer and cpuacct on version 1).
	Controllers []string `json:"controllers"`
	// Writable reports whether airlock may create groups under its own
	// cgroup in every usable controller.
	Writable bool `json:"writable"`
	// Reason says what is missing and how to fix it; "" when memory, cpu and
	// pids limits can all be applied.
	Reason string `json:"reason,omitempty"`
	// Parents maps each usable controller to the directory new groups are
	// made in (airlock's own cgroup there). On version 2 every controller
	// maps to the same directory.
	Parents map[string]string `json:"parents,omitempty"`
	// mounts1 are the v1 hierarchies' mounts Detect read, by controller
	// (nil when none were read): a Group's Start places its thread by
	// them without reading the mount table again.
	mounts1 map[string]mount
}

// mount is one cgroup hierarchy's mount.
type mount struct {
	point, root string
}

// Has reports whether controller c is usable.
func (i Info) Has(c string) bool {
	_, ok := i.Parents[c]
	return ok
}

// Stats are a group's counters, read when asked.
type Stats struct {
	// MemoryPeak is the most memory the group used at once, in bytes (0
	// where the kernel does not keep it, and on version 1 without a
	// memory limit).
	MemoryPeak int64 `json:"memory_peak"`
	// OOMKills counts processes the OOM killer ended for the memory limit.
	OOMKills int64 `json:"oom_kills"`
	// PidsPeak is the most tasks the group held at once (0 where the kernel
	// does not keep it).
	PidsPeak int64 `json:"pids_peak"`
	// PidsRefused counts forks refused at the pids limit.
	PidsRefused int64 `json:"pids_refused"`
	// CPUUsage is the CPU time the group used (0 where not kept: on
	// version 1 the group joins cpuacct only where it is mounted together
	// with a controller the group needs, since joining one just to count
	// costs every Start).
	CPUUsage time.Duration `json:"cpu_usage_ns"`
	// CPUPeriods and CPUThrottled count CFS periods with activity and those
	// in which the quota ran out.
	CPUPeriods   int64 `json:"cpu_periods"`
	CPUThrottled int64 `json:"cpu_throttled"`
}

// validName is ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$, by hand: the regular
// expression's bounded repetition compiled at every airlock start.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// dirName is the directory a group named name gets.
func dirName(name string) (string, error) {
	if !validName(name) {
		return "", errs.Invalidf("cgroup name %q: want 1 to 64 of A-Z a-z 0-9 . _ -, not starting with . _ or -", name)
	}
	return "airlock-" + name, nil
}

// unavailable is the error for a limit the host cannot apply.
func unavailable(field, format string, a ...any) error {
	return errs.New(errs.Unavailable, "%s: %s", field, fmt.Sprintf(format, a...))
}
