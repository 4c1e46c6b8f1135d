package sandbox

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bwrapArity is how many values each bubblewrap option the plan writes
// takes; splitOps refuses an option missing here, so a new one is seen.
var bwrapArity = map[string]int{
	"--unshare-user": 0, "--unshare-pid": 0, "--unshare-ipc": 0, "--unshare-uts": 0, "--unshare-net": 0,
	"--unshare-cgroup-try": 0, "--disable-userns": 0, "--die-with-parent": 0, "--new-session": 0,
	"--clearenv": 0, "--as-pid-1": 0, "--hostname": 1, "--cap-drop": 1, "--cap-add": 1, "--setenv": 2,
	"--symlink": 2, "--proc": 1, "--dev": 1, "--tmpfs": 1, "--mqueue": 1, "--dir": 1, "--remount-ro": 1,
	"--perms": 1, "--size": 1, "--chmod": 2, "--ro-bind": 2, "--bind": 2, "--dev-bind": 2, "--ro-bind-try": 2,
	"--bind-try": 2, "--dev-bind-try": 2, "--ro-bind-fd": 2, "--bind-fd": 2, "--file": 2, "--ro-bind-data": 2,
	"--info-fd": 1, "--chdir": 1, "--seccomp": 1,
}

// splitOps cuts bubblewrap's options into one slice per option with its
// values.
func splitOps(t testing.TB, args []string) [][]string {
	t.Helper()
	var ops [][]string
	for i := 0; i < len(args); {
		n, ok := bwrapArity[args[i]]
		if !ok || i+n >= len(args) {
			t.Fatalf("bubblewrap option %q at %d: unknown to the test (add it to bwrapArity)", args[i], i)
		}
		ops = append(ops, args[i:i+1+n])
		i += 1 + n
	}
	return ops
}

// boxOptions plans spec and returns the box with bubblewrap's options as
// the plan made them.
func boxOptions(t testing.TB, spec Spec, exe string) (*Box, []string) {
	t.Helper()
	box, err := Plan(spec, Tier1, exe)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if !box.Direct() {
		box.Close()
		t.Fatalf("the box has an init; the test wants one bubblewrap starts directly")
	}
	return box, slices.Clone(box.options)
}

// runOptions runs argv in box with bubblewrap's options replaced by opts
// (through a descriptor of its own, after the box's), and returns the
// output and bubblewrap's exit code. It closes the box.
func runOptions(t testing.TB, box *Box, opts, argv []string) (string, int) {
	t.Helper()
	defer box.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf strings.Builder
	for _, a := range opts {
		buf.WriteString(a)
		buf.WriteByte(0)
	}
	go func() {
		w.WriteString(buf.String())
		w.Close()
	}()
	files := append(slices.Clone(box.ExtraFiles), r)
	cmd := exec.Command(box.Path, append([]string{"--args", strconv.Itoa(2 + len(files)), "--"}, argv...)...)
	cmd.Env = []string{}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = files
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("bubblewrap: %v", err)
	}
	return out.String(), 0
}

// dropOps returns opts without the options drop matches.
func dropOps(t testing.TB, opts []string, drop func(op []string) bool) []string {
	var out []string
	for _, op := range splitOps(t, opts) {
		if !drop(op) {
			out = append(out, op...)
		}
	}
	return out
}

// procViewScript prints what a process in the box finds in /proc and the
// covered paths: for every entry of /proc's top level (not the processes),
// of /proc/self, and every entry beneath the covered directories, its
// type and whether an open for reading and an open for writing (appending,
// nothing written) succeed; whether a new file can be made in each covered
// directory; and the content of the masked files. Opening alone changes
// nothing, so the script is safe whatever the cover lets through.
const procViewScript = `
list() {
	for f in "$@"; do
		t=f; [ -d "$f" ] && t=d; [ -L "$f" ] && t=l
		r=-; w=-
		if [ "$t" = f ]; then
			( exec 3<"$f" ) 2>/dev/null && r=r
			( exec 3>>"$f" ) 2>/dev/null && w=w
		elif [ "$t" = d ]; then
			ls "$f" >/dev/null 2>&1 && r=r
			( : > "$f/.airlock-probe" ) 2>/dev/null && w=w
		fi
		echo "$t$r$w $f"
	done
}
list $(ls -d /proc/* /proc/self/* | grep -v '^/proc/[0-9]')
list $(find /proc/sys /proc/irq /proc/bus /proc/acpi /proc/asound /proc/scsi -mindepth 1 2>/dev/null | sort)
for f in /proc/keys /proc/key-users /proc/kcore /proc/slabinfo /proc/vmallocinfo /proc/pagetypeinfo \
	/proc/timer_list /proc/timer_stats /proc/sched_debug /proc/latency_stats; do
	[ -e "$f" ] && echo "content $f $(head -c 65536 "$f" 2>&1 | md5sum)"
done
echo done
`

// oldProcCover is the /proc cover as it was when TestProcView was written,
// kept here as it was (not from the plan's lists): the shape the box's view
// is compared with.
func oldProcCover() []string {
	args := []string{"--tmpfs", "/proc/sys",
		"--ro-bind-try", "/proc/sys/kernel", "/proc/sys/kernel",
		"--ro-bind-try", "/proc/sys/vm", "/proc/sys/vm",
		"--ro-bind-try", "/proc/sys/fs", "/proc/sys/fs",
		"--remount-ro", "/proc/sys"}
	files := []string{"/proc/keys", "/proc/key-users", "/proc/kcore", "/proc/slabinfo", "/proc/vmallocinfo",
		"/proc/pagetypeinfo", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/latency_stats"}
	dirs := []string{"/proc/irq", "/proc/bus", "/proc/acpi", "/proc/asound", "/proc/scsi"}
	for _, path := range append(files, dirs...) {
		fi, err := os.Lstat(path)
		switch {
		case err != nil:
		case fi.IsDir() && slices.Contains(dirs, path):
			args = append(args, "--tmpfs", path, "--remount-ro", path)
		case !fi.IsDir() && slices.Contains(files, path):
			args = append(args, "--dev-bind", "/dev/null", path)
		}
	}
	return append(args, "--remount-ro", "/proc")
}

// isProcCover reports whether op is part of the /proc cover: an option on
// a path beneath /proc (the --proc mount itself aside).
func isProcCover(op []string) bool {
	if op[0] == "--proc" {
		return false
	}
	dest := op[len(op)-1]
	return dest == "/proc" || strings.HasPrefix(dest, "/proc/")
}

// withProcCover returns opts with the /proc cover replaced by cover, in
// the place the plan put it.
func withProcCover(t testing.TB, opts, cover []string) []string {
	var out []string
	done := false
	for _, op := range splitOps(t, opts) {
		if !isProcCover(op) {
			out = append(out, op...)
			continue
		}
		if !done {
			out = append(out, cover...)
			done = true
		}
	}
	if !done {
		t.Fatalf("the plan has no /proc cover: %q", opts)
	}
	return out
}

// procView runs the view script in a default box with the given options
// transform and returns what it printed.
func procView(t *testing.T, change func([]string) []string) string {
	t.Helper()
	box, opts := boxOptions(t, Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}, "/proc/self/exe")
	out, code := runOptions(t, box, change(opts), []string{"/bin/sh", "-c", procViewScript})
	if code != 0 || !strings.HasSuffix(out, "done\n") {
		t.Fatalf("the view script ended with %d: %s", code, out)
	}
	return out
}

// TestProcView: the box's view of /proc and of what covers it (what is
// there, what opens for reading and for writing, where a file can be
// made, the masked files' content) is the same under the plan's cover as
// under the cover it had before being cut down; and the comparison sees
// a weaker cover (one mask left out, /proc/sys left writable).
func TestProcView(t *testing.T) {
	needTier1(t)
	old := procView(t, func(o []string) []string { return withProcCover(t, o, oldProcCover()) })
	now := procView(t, func(o []string) []string { return o })
	t.Logf("view: %d lines", strings.Count(old, "\n"))
	if d := viewDiff(old, now); d != "" {
		t.Errorf("the box's view of /proc changed (- before, + now):\n%s", d)
	}
	if !strings.Contains(old, "content /proc/keys ") || !strings.Contains(old, "dr- /proc/sys/kernel") {
		t.Fatalf("the view lacks the masked /proc/keys or a read-only /proc/sys/kernel:\n%s", old)
	}
	weaker := map[string][]string{
		"no /proc/keys mask": dropOps(t, oldProcCover(), func(op []string) bool { return op[len(op)-1] == "/proc/keys" }),
		"writable /proc/sys": dropOps(t, oldProcCover(), func(op []string) bool { return op[0] == "--remount-ro" && op[1] == "/proc/sys" }),
	}
	for name, cover := range weaker {
		v := procView(t, func(o []string) []string { return withProcCover(t, o, cover) })
		if viewDiff(old, v) == "" {
			t.Errorf("%s: the view compares equal to the full cover's; the comparison cannot see it", name)
		}
	}
}

// viewDiff lists the lines only one of a and b has.
func viewDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var d []string
	for l := range ma {
		if !mb[l] {
			d = append(d, "- "+l)
		}
	}
	for l := range mb {
		if !ma[l] {
			d = append(d, "+ "+l)
		}
	}
	sort.Strings(d)
	return strings.Join(d, "\n")
}

// opGroups are the kinds of bubblewrap operation a default box's options
// hold, for BenchmarkBwrapOps: each drops one kind.
var opGroups = []struct {
	name string
	drop func(op []string) bool
}{
	{"proc-sys", func(op []string) bool { return strings.HasPrefix(op[len(op)-1], "/proc/sys") }},
	{"proc-irq-bus", func(op []string) bool { d := op[len(op)-1]; return d == "/proc/irq" || d == "/proc/bus" }},
	{"proc-mask-files", func(op []string) bool { return op[0] == "--dev-bind" && strings.HasPrefix(op[2], "/proc/") }},
	{"proc-mask-dirs", func(op []string) bool { return slices.Contains(procMaskDirs, op[len(op)-1]) }},
	{"proc-remount", func(op []string) bool { return op[0] == "--remount-ro" && op[1] == "/proc" }},
	{"proc-cover-all", isProcCover},
	{"workdir+chdir", func(op []string) bool {
		return op[0] == "--chdir" || strings.HasPrefix(op[0], "--ro-bind") && strings.HasPrefix(op[len(op)-1], os.TempDir())
	}},
	{"etc", func(op []string) bool { return op[len(op)-1] == "/etc" }},
	{"tmpfs-var-home", func(op []string) bool {
		return op[0] == "--tmpfs" && (op[1] == "/var/tmp" || strings.HasPrefix(op[1], "/home"))
	}},
	{"symlink-bin-sbin", func(op []string) bool { return op[0] == "--symlink" && (op[2] == "/bin" || op[2] == "/sbin") }},
	{"info-fd", func(op []string) bool { return op[0] == "--info-fd" }},
	{"setenv", func(op []string) bool { return op[0] == "--setenv" }},
}

// BenchmarkBwrapOps times bubblewrap running /bin/true with a default
// box's options, against the same options without one kind of operation
// at a time, alternating in one run so the host's load weighs on all
// alike; it reports each median and how much of the full list's time the
// dropped kind costs:
//
//	go test -run XXX -bench BwrapOps -benchtime 40x ./sandbox/
func BenchmarkBwrapOps(b *testing.B) {
	if Probe().Tier() < Tier1 {
		b.Skip("tier 1 unavailable")
	}
	// /etc as one view, as airlock run binds it.
	views, err := os.MkdirTemp("", "airlock-etc-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { RemoveEtcCache(views) })
	spec := Spec{Workdir: b.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/airlock"},
		Caches: NewCaches(CacheConfig{EtcViewDir: views})}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	type subject struct {
		name string
		drop func([]string) bool
		add  []string // options put in before --info-fd
		// move, when set, reorders the options (same set).
		move  func(t testing.TB, opts []string) []string
		times []time.Duration
		n     int
	}
	none := func([]string) bool { return false }
	subjects := []*subject{{name: "full", drop: none},
		// What a box without an init or exec step bound before: the
		// in-box binary at InitPath.
		{name: "+in-box-binary", drop: none, add: []string{"--ro-bind", exe, InitPath}},
		// The order of depth alone the plan used before bwrapOrder.
		{name: "~depth-order", drop: none, move: depthOrder}}
	for _, g := range opGroups {
		subjects = append(subjects, &subject{name: g.name, drop: g.drop})
	}
	run := func(s *subject) {
		box, opts := boxOptions(b, spec, exe)
		opts = dropOps(b, opts, s.drop)
		if s.add != nil {
			i := slices.Index(opts, "--info-fd")
			opts = slices.Concat(opts[:i:i], s.add, opts[i:])
		}
		if s.move != nil {
			opts = s.move(b, opts)
		}
		s.n = len(splitOps(b, opts))
		start := time.Now()
		out, code := runOptions(b, box, opts, []string{"/usr/bin/true"}) // /bin may be a dropped symlink
		s.times = append(s.times, time.Since(start))
		if code != 0 {
			b.Fatalf("%s: bubblewrap ended with %d: %s", s.name, code, out)
		}
	}
	for _, s := range subjects {
		run(s)
		s.times = nil
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// In a new order each round: no kind always follows another.
		for _, j := range rand.Perm(len(subjects)) {
			run(subjects[j])
		}
	}
	b.StopTimer()
	// The median, and the lower quartile, which the other work on a
	// shared host disturbs less.
	quantile := func(d []time.Duration, q float64) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[int(q*float64(len(d)))]
	}
	full, fullQ := quantile(subjects[0].times, 0.5), quantile(subjects[0].times, 0.25)
	var tab strings.Builder
	fmt.Fprintf(&tab, "%-16s %4s %9s %9s %7s %9s %9s %7s\n", "without", "ops", "median", "saves", "ratio", "q1", "saves", "ratio")
	for _, s := range subjects {
		m, q := quantile(s.times, 0.5), quantile(s.times, 0.25)
		fmt.Fprintf(&tab, "%-16s %4d %7.2fms %7.2fms %6.3f× %7.2fms %7.2fms %6.3f×\n", s.name, s.n,
			ms(m), ms(full-m), float64(m)/float64(full), ms(q), ms(fullQ-q), float64(q)/float64(fullQ))
		b.ReportMetric(ms(m), s.name+"-ms")
	}
	if b.N < 2 {
		return // the calibration round: too few runs for a table
	}
	// Printed, not logged: a benchmark's log is cut at ten lines.
	fmt.Print("bubblewrap running /usr/bin/true, a default box's options without one kind:\n" + tab.String())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// TestInBoxBinaryBoundOnlyWhereRun: a box bubblewrap starts directly with
// no exec wall has nothing at InitPath (nothing in it runs airlock's code);
// a walled box, whose exec step is that code, has it bound, read-only.
func TestInBoxBinaryBoundOnlyWhereRun(t *testing.T) {
	needTier1(t)
	exe := airlockIn(t, t.TempDir())
	probe := []string{"/bin/sh", "-c", "if [ -e " + InitPath + " ]; then echo there; else echo absent; fi; ( : >> " + InitPath + " ) 2>/dev/null && echo writable; echo done"}
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"direct, no wall", Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}, "absent\ndone\n"},
		{"exec wall", walledSpec(t), "there\ndone\n"},
		// Spec.BindInBox (for tests whose tool is the binary found there)
		// binds it in the box whose spec asks, and only there.
		{"direct, asked to bind it", Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}, BindInBox: true}, "there\ndone\n"},
		{"direct, after a plan that asked", Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}, "absent\ndone\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			box, err := Plan(tc.spec, Tier1, exe)
			if err != nil {
				t.Fatal(err)
			}
			if o := runBox(t, box, probe); o.code != 0 || o.out != tc.want {
				t.Fatalf("got exit %d and %q, want 0 and %q", o.code, o.out, tc.want)
			}
		})
	}
}

// viewScript prints the box's mounts without their numbers (mount point,
// root, options, type, source, the file system's options; a generated
// file's random name left out) and what lies at the top of its tree (name,
// type, mode, owner), both sorted.
const viewScript = `
awk '{ for (i = 7; $i != "-"; i++) ; print $5, $4, $6, $(i+1), $(i+2), $(i+3) }' /proc/self/mountinfo |
	sed 's|^\([^ ]* \)/bindfile[^/]*/|\1/bindfile/|' | sort
for d in / /run /tmp /var/tmp /dev /home /proc/sys /etc; do
	stat -c '%n %F %a %u:%g' "$d" "$d"/* "$d"/.[!.]* 2>/dev/null
done | sort
echo done
`

// depthOrder is opts in the order the plan used before bwrapOrder: the
// namespace options, then the mounts by the depth of their destination
// alone (the /proc cover as one after /proc), then the rest.
func depthOrder(t testing.TB, opts []string) []string {
	t.Helper()
	type unit struct {
		dest string
		args []string
	}
	var head, tail []string
	var units []unit
	var pending []string // --perms or --size, which go with the next op
	for _, op := range splitOps(t, opts) {
		switch {
		case op[0] == "--perms" || op[0] == "--size":
			pending = append(pending, op...)
		case bwrapArity[op[0]] == 0 || op[0] == "--hostname" || op[0] == "--cap-drop" || op[0] == "--cap-add":
			head = append(head, op...)
		case op[0] == "--info-fd" || op[0] == "--chdir" || op[0] == "--setenv" || op[0] == "--seccomp":
			tail = append(tail, op...)
		case isProcCover(op) && len(units) > 0 && units[len(units)-1].dest == "/proc" && units[len(units)-1].args[0] != "--proc":
			u := &units[len(units)-1]
			u.args = append(u.args, op...)
		case isProcCover(op):
			units = append(units, unit{"/proc", slices.Clone(op)})
		default:
			units = append(units, unit{op[len(op)-1], append(pending, op...)})
			pending = nil
		}
	}
	sort.SliceStable(units, func(i, j int) bool { return depth(units[i].dest) < depth(units[j].dest) })
	out := head
	for _, u := range units {
		out = append(out, u.args...)
	}
	return append(out, tail...)
}

// TestOpOrderView: the box bubblewrap makes from the plan's options, in
// the order that reads the mount table least (bwrapOrder), is the box it
// made from the same options in the order of depth alone: the same mounts
// with the same options and sources, the same files at the top of its
// tree. The comparison sees a box that differs (one tmpfs left out).
func TestOpOrderView(t *testing.T) {
	needTier1(t)
	spec := Spec{Workdir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/airlock"}}
	view := func(change func([]string) []string) string {
		box, opts := boxOptions(t, spec, "/proc/self/exe")
		out, code := runOptions(t, box, change(opts), []string{"/bin/sh", "-c", viewScript})
		if code != 0 || !strings.HasSuffix(out, "done\n") {
			t.Fatalf("the view script ended with %d: %s", code, out)
		}
		return out
	}
	_, opts := boxOptions(t, spec, "/proc/self/exe")
	if slices.Equal(depthOrder(t, opts), opts) {
		t.Fatalf("the plan's order is the order of depth: the test compares nothing")
	}
	now := view(func(o []string) []string { return o })
	before := view(func(o []string) []string { return depthOrder(t, o) })
	if d := viewDiff(before, now); d != "" {
		t.Errorf("the box's view changed with the order of its operations (- by depth, + the plan's):\n%s", d)
	}
	if !strings.Contains(now, "/proc/keys ") || !strings.Contains(now, "/var/tmp ") {
		t.Fatalf("the view lacks the mounts it should list:\n%s", now)
	}
	other := view(func(o []string) []string {
		return dropOps(t, o, func(op []string) bool { return op[0] == "--tmpfs" && op[1] == "/var/tmp" })
	})
	if viewDiff(now, other) == "" {
		t.Errorf("a box without its /var/tmp tmpfs shows the same view; the comparison cannot see it")
	}
}
