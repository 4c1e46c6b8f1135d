//go:build linux

package escape

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/runner"
	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/seccomp"
)

// Options configure a run of the matrix.
type Options struct {
	// Exe is the airlock binary (or a test binary that dispatches AttackArg
	// and the box init): the runner re-executes it as the box's init and
	// the attempts run it as their attack tool.
	Exe string
	// Cases is the parsed case file.
	Cases *Cases
	// Only limits the run to these attempt ids; empty runs every attempt.
	Only []string
	// TempDir is where the targets are made; "" is the user's cache
	// directory (never /tmp, which the box replaces with its own).
	TempDir string
	// Progress, when not nil, is told each attempt as it starts.
	Progress func(attempt string)
}

// run is one attempt in one place: its working directory and marker.
type run struct {
	w      *world
	wd     string
	marker string
	victim *victim
	// unconfined is set for the run without a box.
	unconfined bool
	// asked is how many names the proxies had looked up before the run.
	egressAsked, naiveAsked int
}

// out is what a run produced.
type out struct {
	text      string // stdout and stderr
	exit, sig int
	wall      bool
	err       error // the runner's error: nothing ran
}

func (o out) ok() bool { return o.err == nil && o.exit == 0 && o.sig == 0 && !o.wall }

// attempt is the code of one case-file attempt.
type attempt struct {
	id    string
	class string
	// args are the attack's arguments, after AttackArg.
	args func(r *run) []string
	// spec adjusts the box (limits, network) and the unconfined run alike.
	spec func(s *sandbox.Spec)
	// egress gives the box the egress proxy and the unconfined run the
	// naive one.
	egress bool
	// victim starts a process of the same user outside the box first.
	victim bool
	// inheritFlag hands the unconfined run the flag file as descriptor 3.
	inheritFlag bool
	// newNS runs the unconfined run in a mount namespace of its own, so a
	// mount it makes touches nothing of the host.
	newNS bool
	// tty gives the unconfined run a terminal as its standard input.
	tty bool
	// ownNet runs the unconfined run, when not root, as root of a user
	// and network namespace of its own: an ordinary user opens a raw
	// socket nowhere else, so that is where the attempt is shown to work.
	ownNet bool
	// reached judges a run from its output and the world's state.
	reached func(r *run, o out) (bool, string)
	// untested, when not nil, says why the attempt cannot be tried here.
	untested func(w *world) string
	// grant, when not nil, widens the spec of the run (a read grant of
	// the world's base).
	grant func(r *run, s *sandbox.Spec)
	// before, when not nil, prepares the run's targets.
	before func(r *run) error
}

func tokenIn(r *run, o out) (bool, string) {
	if strings.Contains(o.text, r.w.token) {
		return true, "got the token: " + firstLine(o.text, r.w.token)
	}
	return false, lastLine(o.text)
}

func exitZero(_ *run, o out) (bool, string) {
	if o.ok() {
		return true, lastLine(o.text)
	}
	if o.sig != 0 {
		return false, fmt.Sprintf("killed by signal %d", o.sig)
	}
	return false, lastLine(o.text)
}

func wrote(rel string) func(r *run, o out) (bool, string) {
	return func(r *run, o out) (bool, string) {
		return wroteAt(filepath.Join(r.wd, rel), rel, r, o)
	}
}

// wroteAt judges a write by the host's file, never by the attack's word: a
// write that landed in the box's own copy of a directory changed nothing.
func wroteAt(p, name string, r *run, o out) (bool, string) {
	if fileHas(p, r.marker) {
		return true, "wrote " + name
	}
	if o.ok() {
		return false, "the write landed in the box's own file system; " + name + " on the host is unchanged"
	}
	return false, lastLine(o.text)
}

func firstLine(s, with string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, with) {
			return trim(l)
		}
	}
	return ""
}

func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return trim(ls[len(ls)-1])
}

func trim(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

func noIPv6(w *world) string {
	if w.tcp6 == "" {
		return "this host has no IPv6 loopback"
	}
	return ""
}

func noHostAddr(w *world) string {
	if w.hostTCP == "" {
		return "this host has no non-loopback IPv4 address"
	}
	return ""
}

func withPort(host, addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return net.JoinHostPort(host, port)
}

// attempts lists every attempt this platform can make.
func attempts() []attempt {
	fsRead := func(id string, paths func(r *run) []string) attempt {
		return attempt{id: id, class: "fs-read", args: func(r *run) []string { return append([]string{"read"}, paths(r)...) }, reached: tokenIn}
	}
	rel := func(r *run) string { return "../" + filepath.Base(r.w.flag) }
	as := []attempt{
		fsRead("read-absolute", func(r *run) []string { return []string{r.w.flag} }),
		fsRead("read-relative", func(r *run) []string { return []string{rel(r)} }),
		fsRead("read-dotdot", func(r *run) []string { return []string{r.wd + "/../" + filepath.Base(r.w.flag)} }),
		fsRead("read-double-slash", func(r *run) []string { return []string{"/" + strings.ReplaceAll(r.w.flag, "/", "//")} }),
		fsRead("read-planted-symlink", func(r *run) []string { return []string{r.wd + "/planted"} }),
		{id: "read-made-symlink", class: "fs-read", args: func(r *run) []string { return []string{"symlink-read", r.w.flag, r.wd + "/made-link"} }, reached: tokenIn},
		{id: "read-made-hardlink", class: "fs-read", args: func(r *run) []string { return []string{"hardlink-read", r.w.flag, r.wd + "/made-hardlink"} }, reached: tokenIn},
		fsRead("read-proc-self-cwd", func(r *run) []string { return []string{"/proc/self/cwd/" + rel(r)} }),
		fsRead("read-proc-1-root", func(r *run) []string { return []string{"/proc/1/root" + r.w.flag} }),
		{id: "read-proc-pid-root", class: "fs-read", victim: true, reached: tokenIn,
			args: func(r *run) []string { return []string{"read", fmt.Sprintf("/proc/%d/root%s", r.victim.pid, r.w.flag)} }},
		{id: "read-proc-pid-environ", class: "fs-read", victim: true, reached: tokenIn,
			args: func(r *run) []string { return []string{"read", fmt.Sprintf("/proc/%d/environ", r.victim.pid)} }},
		{id: "read-inherited-fd", class: "fs-read", inheritFlag: true, reached: tokenIn,
			args: func(*run) []string { return []string{"fds"} }},

		{id: "write-protected-existing", class: "fs-write", reached: wrote(".bashrc"),
			args: func(r *run) []string { return []string{"write", r.wd + "/.bashrc", r.marker} }},
		{id: "write-protected-hook", class: "fs-write", reached: wrote(".git/hooks/pre-commit"),
			args: func(r *run) []string { return []string{"write", r.wd + "/.git/hooks/pre-commit", r.marker} }},
		{id: "write-protected-git-config", class: "fs-write", reached: wrote(".git/config"),
			args: func(r *run) []string { return []string{"write", r.wd + "/.git/config", r.marker} }},
		{id: "write-protected-new-file", class: "fs-write", reached: wrote(".mcp.json"),
			args: func(r *run) []string { return []string{"write", r.wd + "/.mcp.json", r.marker} }},
		{id: "write-protected-new-dir", class: "fs-write", reached: wrote(".vscode/settings.json"),
			args: func(r *run) []string { return []string{"mkdir-write", r.wd + "/.vscode", "settings.json", r.marker} }},
		{id: "write-protected-via-symlink", class: "fs-write", reached: wrote(".bashrc"),
			args: func(r *run) []string {
				return []string{"symlink-write", r.wd + "/.bashrc", r.wd + "/innocent", r.marker}
			}},
		{id: "write-protected-new-via-symlink", class: "fs-write", reached: wrote(".mcp.json"),
			args: func(r *run) []string {
				return []string{"symlink-write", r.wd + "/.mcp.json", r.wd + "/innocent", r.marker}
			}},
		{id: "write-protected-via-hardlink", class: "fs-write", reached: wrote(".bashrc"),
			args: func(r *run) []string {
				return []string{"hardlink-write", r.wd + "/.bashrc", r.wd + "/innocent", r.marker}
			}},
		{id: "write-protected-rename-aside", class: "fs-write", reached: wrote(".git/hooks/pre-commit"),
			args: func(r *run) []string { return []string{"rename-aside", r.wd + "/.git", "hooks/pre-commit", r.marker} }},
		{id: "write-git-commondir", class: "fs-write", reached: wrote(".git/commondir"),
			args: func(r *run) []string { return []string{"write", r.wd + "/.git/commondir", r.marker} }},
		{id: "write-git-include-target", class: "fs-write", reached: wrote(".gitconfig"),
			args: func(r *run) []string { return []string{"write", r.wd + "/.gitconfig", r.marker} }},
		{id: "write-git-hookspath", class: "fs-write", reached: wrote(".husky/pre-commit"),
			args: func(r *run) []string { return []string{"mkdir-write", r.wd + "/.husky", "pre-commit", r.marker} }},
		{id: "write-git-submodule-config", class: "fs-write", reached: wrote(".git/modules/sub/config"),
			args: func(r *run) []string { return []string{"mkdir-write", r.wd + "/.git/modules/sub", "config", r.marker} }},
		{id: "write-git-nested-config", class: "fs-write", reached: wrote("pkg/.git/config"),
			args: func(r *run) []string { return []string{"write", r.wd + "/pkg/.git/config", r.marker} }},
		{id: "write-agent-config-new-dir", class: "fs-write", reached: wrote(".cursor/mcp.json"),
			args: func(r *run) []string { return []string{"mkdir-write", r.wd + "/.cursor", "mcp.json", r.marker} }},
		{id: "write-hook-manager-config", class: "fs-write", reached: wrote(".pre-commit-config.yaml"),
			args: func(r *run) []string { return []string{"write", r.wd + "/.pre-commit-config.yaml", r.marker} }},
		{id: "write-beside-workdir", class: "fs-write",
			args: func(r *run) []string { return []string{"write", r.w.base + "/outside-" + r.marker, r.marker} },
			reached: func(r *run, o out) (bool, string) {
				return wroteAt(r.w.base+"/outside-"+r.marker, "the file beside the working directory", r, o)
			}},

		{id: "tcp-127.0.0.1", class: "net", reached: tokenIn, args: func(r *run) []string { return []string{"tcp", r.w.tcp4} }},
		{id: "tcp-ipv6-loopback", class: "net", reached: tokenIn, untested: noIPv6, args: func(r *run) []string { return []string{"tcp", r.w.tcp6} }},
		{id: "tcp-host-address", class: "net", reached: tokenIn, untested: noHostAddr, args: func(r *run) []string { return []string{"tcp", r.w.hostTCP} }},
		{id: "udp-127.0.0.1", class: "net", reached: tokenIn, args: func(r *run) []string { return []string{"udp", r.w.udp4} }},
		{id: "udp-ipv6-loopback", class: "net", reached: tokenIn, untested: func(w *world) string {
			if w.udp6 == "" {
				return "this host has no IPv6 loopback"
			}
			return ""
		}, args: func(r *run) []string { return []string{"udp", r.w.udp6} }},
		{id: "dns-udp", class: "net", reached: tokenIn, args: func(r *run) []string { return []string{"dns-udp", r.w.dns} }},
		{id: "dns-tcp", class: "net", reached: tokenIn, args: func(r *run) []string { return []string{"dns-tcp", r.w.dns} }},
		{id: "unix-socket-path", class: "net", reached: tokenIn, args: func(r *run) []string { return []string{"unix", r.w.unixPath} }},
		{id: "unix-socket-abstract", class: "net", reached: tokenIn, args: func(r *run) []string { return []string{"unix", r.w.abstract} }},
		{id: "raw-socket", class: "net", reached: exitZero, ownNet: true, args: func(*run) []string { return []string{"raw"} }},
		{id: "unix-socket-in-read-grant", class: "net", reached: tokenIn,
			grant: func(r *run, s *sandbox.Spec) { s.Read = append(s.Read, r.w.base) },
			args:  func(r *run) []string { return []string{"unix", r.w.unixPath} }},
		{id: "write-through-outside-hardlink", class: "fs-write",
			before: func(r *run) error {
				outside := filepath.Join(r.w.base, "store-"+r.marker)
				if err := os.WriteFile(outside, []byte("the store's\n"), 0o644); err != nil {
					return err
				}
				return os.Link(outside, filepath.Join(r.wd, "linked"))
			},
			args: func(r *run) []string { return []string{"write", r.wd + "/linked", r.marker} },
			reached: func(r *run, o out) (bool, string) {
				return wroteAt(filepath.Join(r.w.base, "store-"+r.marker), "the file's other name outside the working directory", r, o)
			}},
		{id: "open-child-proc-mem", class: "process", reached: exitZero, args: func(*run) []string { return []string{"child-mem"} }},
		{id: "read-proc-keys", class: "kernel", reached: exitZero, args: func(*run) []string { return []string{"read-some", "/proc/keys"} }},
		{id: "read-proc-timer-list", class: "kernel", reached: exitZero, args: func(*run) []string { return []string{"read-some", "/proc/timer_list"} }},
	}
	// viaProxy tunnels to host at the port of addr; host "" is addr itself.
	viaProxy := func(id, host string, addr func(w *world) string, untested func(w *world) string) attempt {
		return attempt{id: id, class: "egress", egress: true, reached: tokenIn, untested: untested,
			args: func(r *run) []string {
				if host == "" {
					return []string{"proxy-connect", addr(r.w)}
				}
				return []string{"proxy-connect", withPort(host, addr(r.w))}
			}}
	}
	tcp4 := func(w *world) string { return w.tcp4 }
	tcp6 := func(w *world) string { return w.tcp6 }
	as = append(as,
		viaProxy("egress-127.0.0.1", "127.0.0.1", tcp4, nil),
		viaProxy("egress-127.1", "127.1", tcp4, nil),
		viaProxy("egress-hex", "0x7f000001", tcp4, nil),
		viaProxy("egress-decimal", "2130706433", tcp4, nil),
		viaProxy("egress-octal", "0177.0.0.1", tcp4, nil),
		viaProxy("egress-zeros", "127.000.000.001", tcp4, nil),
		viaProxy("egress-localhost", "localhost", tcp4, nil),
		viaProxy("egress-localhost-trailing-dot", "LOCALHOST.", tcp4, nil),
		viaProxy("egress-0.0.0.0", "0.0.0.0", tcp4, nil),
		viaProxy("egress-ipv6-loopback", "::1", tcp6, noIPv6),
		viaProxy("egress-ipv4-mapped-ipv6", "::ffff:127.0.0.1", tcp4, nil),
		viaProxy("egress-name-to-loopback", "canary.test", tcp4, nil),
		viaProxy("egress-name-over-udp-dns", "udp.canary.test", tcp4, nil),
		viaProxy("egress-name-over-tcp-dns", "tcp.canary.test", tcp4, nil),
		viaProxy("egress-rebinding", "rebind.test", tcp4, nil),
		viaProxy("egress-host-address", "", func(w *world) string { return w.hostTCP }, noHostAddr),
		attempt{id: "egress-redirect", class: "egress", egress: true, reached: tokenIn,
			args: func(r *run) []string { return []string{"proxy-get", "http://" + r.w.redirect + "/"} }},
		attempt{id: "egress-metadata", class: "egress", egress: true, reached: tokenIn,
			args: func(*run) []string { return []string{"proxy-connect", "169.254.169.254:80"} }},
		attempt{id: "egress-resolve-refused-name", class: "egress", egress: true,
			args: func(*run) []string { return []string{"proxy-connect", "refused.test:80"} },
			reached: func(r *run, o out) (bool, string) {
				// The unconfined run's naive proxy looks it up; airlock's
				// must not even ask.
				l, since := r.w.egressLookups, r.egressAsked
				if r.unconfined {
					l, since = r.w.naiveLookups, r.naiveAsked
				}
				if l.sawSince("refused.test", since) {
					return true, "the proxy looked refused.test up"
				}
				return false, lastLine(o.text)
			}},
	)
	as = append(as,
		attempt{id: "signal-outside-process", class: "process", victim: true,
			args: func(r *run) []string { return []string{"signal", strconv.Itoa(r.victim.pid)} },
			reached: func(r *run, o out) (bool, string) {
				if r.victim.signalled() {
					return true, "the outside process got SIGUSR1"
				}
				return false, lastLine(o.text)
			}},
		attempt{id: "leave-process-behind", class: "process",
			args: func(r *run) []string { return []string{"linger", r.marker} },
			reached: func(r *run, o out) (bool, string) {
				// The runner has returned: anything of the run still alive
				// outlived it.
				var left []int
				for i := 0; i < 10; i++ {
					if left = processesWith(r.marker); len(left) > 0 {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				if len(left) > 0 {
					return true, fmt.Sprintf("process %v outlived the run", left)
				}
				return false, "nothing outlived the run"
			}},
		attempt{id: "terminal-injection", class: "process", tty: true,
			args: func(r *run) []string { return []string{"tiocsti", r.marker} },
			reached: func(r *run, o out) (bool, string) {
				if r.victim != nil && r.victim.ttyGot(r.marker) {
					return true, "keystrokes reached the terminal"
				}
				return false, lastLine(o.text)
			}},
		attempt{id: "create-user-namespace", class: "kernel", reached: exitZero, args: func(*run) []string { return []string{"userns"} }},
		attempt{id: "mount", class: "kernel", reached: exitZero, newNS: true, args: func(r *run) []string { return []string{"mount", r.wd + "/mnt"} }},
		attempt{id: "exceed-memory", class: "limits", reached: exitZero,
			spec: func(s *sandbox.Spec) { s.Limits.MemoryBytes = 64 << 20 },
			args: func(*run) []string { return []string{"hog", "256"} }},
		attempt{id: "exceed-pids", class: "limits", reached: exitZero,
			spec: func(s *sandbox.Spec) { s.Limits.Pids = 32 },
			args: func(r *run) []string { return []string{"fork", "48", r.marker} }},
		attempt{id: "exceed-cpu", class: "limits", reached: exitZero,
			// A small quota, so a host loaded by other work still gives
			// the unconfined run well over the threshold.
			spec: func(s *sandbox.Spec) { s.Limits.CPU = 0.02 },
			args: func(*run) []string { return []string{"spin", "1000", "0.05"} }},
		attempt{id: "exceed-wall", class: "limits", reached: exitZero,
			spec: func(s *sandbox.Spec) { s.Limits.Wall = time.Second },
			args: func(*run) []string { return []string{"sleep", "3s"} }},
	)
	for _, p := range seccomp.Probes(seccomp.Options{}) {
		if p.Want == seccomp.Allow {
			continue
		}
		name := p.Name
		as = append(as, attempt{id: SeccompID(name), class: "seccomp", reached: exitZero,
			args: func(*run) []string { return []string{"probe", name} }})
	}
	return as
}

// SeccompID is the attempt id of the seccomp probe named name.
func SeccompID(name string) string {
	r := strings.NewReplacer("(CLONE_", "-", "(", "-", ")", "", "|", "-", " ", "-", "_", "-")
	return "seccomp-" + strings.ToLower(strings.Trim(r.Replace(name), "-"))
}

// AttemptIDs lists the ids of the attempts this platform makes, with their
// classes.
func AttemptIDs() map[string]string {
	out := map[string]string{}
	for _, a := range attempts() {
		out[a.id] = a.class
	}
	return out
}

// useEtcViews gives the boxes their /etc as a run through the CLI does:
// one view (sandbox.CacheConfig.EtcViewDir), kept in a directory of the
// matrix's own beside the targets, which no box may write. Every box's
// spec carries the caches returned; remove removes the directory.
func useEtcViews(parent string) (caches *sandbox.Caches, remove func(), err error) {
	dir, err := os.MkdirTemp(parent, "airlock-escape-etc-")
	if err != nil {
		return nil, nil, err
	}
	return sandbox.NewCaches(sandbox.CacheConfig{EtcViewDir: dir}), func() { sandbox.RemoveEtcCache(dir) }, nil
}

// Run runs the matrix: every attempt unconfined, then on every mechanism the
// case file lets this platform run.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Cases == nil || o.Exe == "" {
		return nil, errs.Invalidf("escape: Run needs the case file and the airlock binary")
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	rep := &Report{Platform: platform}
	probe := sandbox.Probe()
	for _, m := range Mechanisms {
		row, ok := o.Cases.Row(m.Name, platform)
		st := MechanismStatus{Mechanism: m}
		switch {
		case !ok:
			return nil, errs.Invalidf("escape cases: no row for mechanism %q on %s", m.Name, platform)
		case row.Status != StatusRun:
			st.Status, st.Reason = row.Status, row.Reason
		case m.Tier == int(sandbox.Tier2):
			// gVisor is asked for by name, never the probe's best: the
			// column runs wherever tier 2 resolves.
			if _, err := sandbox.Resolve(sandbox.Tier2, sandbox.HostFrom(probe)); err != nil {
				st.Status, st.Reason = StatusUntested, "this host cannot give tier 2: "+err.Error()
			} else {
				st.Status = StatusRun
			}
		case int(probe.Tier()) < m.Tier:
			st.Status, st.Reason = StatusUntested, "this host cannot give tier "+strconv.Itoa(m.Tier)+": "+probe.Why
		default:
			st.Status = StatusRun
		}
		rep.Mechanisms = append(rep.Mechanisms, st)
	}
	if err := preflight(o.Exe); err != nil {
		return nil, err
	}
	tmp := o.TempDir
	if tmp == "" {
		// Not /tmp: the box has a private /tmp, which would hide the
		// targets whatever else held. A user's cache directory is where a
		// real secret beside a project would be: on the host file system.
		if d, err := os.UserCacheDir(); err == nil && os.MkdirAll(filepath.Join(d, "airlock"), 0o700) == nil {
			tmp = filepath.Join(d, "airlock")
		}
	}
	w, err := newWorld(tmp)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "escape: set up the targets")
	}
	defer w.close()
	caches, remove, err := useEtcViews(tmp)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "escape: the directory of the boxes' /etc views")
	}
	defer remove()
	w.caches = caches

	code := map[string]attempt{}
	for _, a := range attempts() {
		code[a.id] = a
	}
	for _, c := range o.Cases.Attempts {
		if len(o.Only) > 0 && !contains(o.Only, c.ID) {
			continue
		}
		if o.Progress != nil {
			o.Progress(c.ID)
		}
		a, ok := code[c.ID]
		if !ok {
			reason := "not an attempt on " + platform
			rep.Baselines = append(rep.Baselines, Baseline{Attempt: c.ID, Detail: reason})
			for _, m := range rep.Mechanisms {
				rep.Results = append(rep.Results, Result{Attempt: c.ID, Class: c.Class, Mechanism: m.Name, Outcome: Untested, Detail: reason})
			}
			continue
		}
		base := Baseline{Attempt: c.ID}
		if why := a.untestedIf(w); why != "" {
			base.Detail = why
		} else {
			base.Reached, base.Detail = runUnconfined(ctx, w, a, o.Exe)
		}
		rep.Baselines = append(rep.Baselines, base)
		for _, m := range rep.Mechanisms {
			res := Result{Attempt: c.ID, Class: c.Class, Mechanism: m.Name}
			switch {
			case m.Status == StatusUnsupported:
				res.Outcome, res.Detail = Unsupported, m.Reason
			case m.Status != StatusRun:
				res.Outcome, res.Detail = Untested, m.Reason
			case !base.Reached:
				res.Outcome, res.Detail = Untested, "unconfined, it did not reach its target either: "+base.Detail
			case a.id == "exceed-cpu" && m.Tier == int(sandbox.Tier2):
				res.Outcome, res.Detail = Untested, gvisorCPUUntested
			default:
				res.Outcome, res.Detail = runBoxed(ctx, w, a, o.Exe, m)
			}
			rep.Results = append(rep.Results, res)
		}
	}
	rep.count()
	return rep, nil
}

func (a attempt) untestedIf(w *world) string {
	if a.untested == nil {
		return ""
	}
	return a.untested(w)
}

// prepare makes the run's working directory, marker and victim.
func prepare(w *world, a attempt) (*run, error) {
	wd, err := w.workdir()
	if err != nil {
		return nil, err
	}
	r := &run{w: w, wd: wd, marker: "airlock-escape-" + randHex(8),
		egressAsked: w.egressLookups.count(), naiveAsked: w.naiveLookups.count()}
	if a.victim || a.tty {
		v, err := startVictim(w, a.tty)
		if err != nil {
			return nil, err
		}
		r.victim = v
	}
	if a.before != nil {
		if err := a.before(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *run) finish() {
	if r.victim != nil {
		r.victim.stop()
	}
	// Whatever the attempt started and left (only processes carrying this
	// run's marker, which only this run's attack tool starts).
	for _, pid := range processesWith(r.marker) {
		unix.Kill(pid, unix.SIGKILL)
	}
}

func spec(r *run, a attempt) sandbox.Spec {
	s := sandbox.Spec{
		Workdir: r.wd, Writable: true, Write: []string{r.wd},
		Env:    []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/box", "LANG=C.UTF-8"},
		Caches: r.w.caches,
	}
	if a.spec != nil {
		a.spec(&s)
	}
	if a.grant != nil {
		a.grant(r, &s)
	}
	return s
}

// runUnconfined runs the attack as a plain process of this user: no
// namespace, no filter, no limit.
func runUnconfined(ctx context.Context, w *world, a attempt, exe string) (bool, string) {
	r, err := prepare(w, a)
	if err != nil {
		return false, "setting up: " + err.Error()
	}
	defer r.finish()
	s := spec(r, a)
	env := s.Env
	if a.egress {
		env = append(env, w.naiveEnv()...)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return false, err.Error()
	}
	stdin := (*os.File)(nil)
	if a.tty {
		stdin = r.victim.tty
	}
	files := []*os.File{stdin, pw, pw}
	if a.inheritFlag {
		files = append(files, w.flagFile)
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	if a.newNS {
		sys.Unshareflags = syscall.CLONE_NEWNS
	}
	if a.ownNet && os.Geteuid() != 0 {
		sys.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
		sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	argv := append([]string{exe, AttackArg}, a.args(r)...)
	p, err := os.StartProcess(exe, argv, &os.ProcAttr{Dir: r.wd, Env: env, Files: files, Sys: sys})
	pw.Close()
	if err != nil {
		pr.Close()
		return false, "start: " + err.Error()
	}
	var buf bytes.Buffer
	copied := make(chan struct{})
	go func() { buf.ReadFrom(pr); pr.Close(); close(copied) }()
	done := make(chan *os.ProcessState, 1)
	go func() { st, _ := p.Wait(); done <- st }()
	limit := 30 * time.Second
	if s.Limits.Wall > 0 {
		// The unconfined run has no wall clock: it shows the attack
		// outlasts the limit.
		limit += 3 * s.Limits.Wall
	}
	var st *os.ProcessState
	select {
	case st = <-done:
	case <-time.After(limit):
		syscall.Kill(-p.Pid, syscall.SIGKILL)
		st = <-done
	case <-ctx.Done():
		syscall.Kill(-p.Pid, syscall.SIGKILL)
		st = <-done
	}
	// Children that keep the pipe open must not hold the judge.
	select {
	case <-copied:
	case <-time.After(time.Second):
		pr.Close()
	}
	o := out{text: buf.String()}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok {
		o.exit = ws.ExitStatus()
		if ws.Signaled() {
			o.sig = int(ws.Signal())
		}
	}
	r.unconfined = true
	return a.reached(r, o)
}

// runBoxed runs the attack through the runner on mechanism m.
func runBoxed(ctx context.Context, w *world, a attempt, exe string, m MechanismStatus) (Outcome, string) {
	r, err := prepare(w, a)
	if err != nil {
		return Failed, "setting up: " + err.Error()
	}
	defer r.finish()
	s := spec(r, a)
	if a.egress {
		s.Net = &sandbox.NetSpec{ProxySocket: w.egressSock, Token: w.egressToken}
		if m.Tier == 0 {
			// Tier 0 has the host's network and no forwarder: the attack
			// is pointed at the unchecked proxy, as any program there
			// could be.
			s.Env = append(s.Env, w.naiveEnv()...)
		}
	}
	// The attack tool is the airlock binary, bound read-only into the box
	// at its own path: the box's in-box code may be airlock-box, which
	// has no attacks in it.
	tool := exe
	if m.Tier >= 1 {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			tool = real
		}
		s.Read = append(s.Read, tool)
	}
	var buf lockedBuffer
	res, err := runner.Run(ctx, exe, runner.Request{
		Argv: append([]string{tool, AttackArg}, a.args(r)...), Spec: s, Tier: sandbox.Tier(m.Tier),
		Stdout: &buf, Stderr: &buf,
	})
	if err != nil {
		return Failed, trim(err.Error())
	}
	o := out{text: buf.String(), exit: res.ExitCode, sig: res.Signal, wall: res.WallTimeout}
	reached, detail := a.reached(r, o)
	if reached && m.Tier == int(sandbox.Tier2) && a.class == "seccomp" && res.Description.Mechanism == "gvisor" {
		// The host's filter guards the host's kernel, which a gVisor
		// box never calls: its calls go to gVisor's kernel, which says
		// so (uname), and gVisor's own host filter confines that.
		if k := kernelLine(o.text); strings.Contains(k, "gvisor") {
			return Held, "answered by gVisor's kernel, not the host's (" + k + "): " + firstLineOf(o.text)
		}
	}
	switch {
	case reached && m.Confines:
		return Escaped, detail
	case reached:
		return Open, detail
	}
	if detail == "" {
		detail = fmt.Sprintf("exit %d", res.ExitCode)
	}
	return Held, detail
}

// gvisorCPUUntested is why the CPU row is untested at tier 2.
const gvisorCPUUntested = "gVisor's kernel counts a task's CPU time by the turns it gives it, which the host cgroup's throttling stretches, so the attack cannot measure the limit from inside; the limit is the host cgroup's around gVisor (runner's TestLimits runs it on tier 2)"

// kernelLine is the attack's report of the kernel that answered it.
func kernelLine(text string) string {
	for _, l := range strings.Split(text, "\n") {
		if k, ok := strings.CutPrefix(l, "kernel: "); ok {
			return strings.TrimSpace(k)
		}
	}
	return ""
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// preflight checks that exe runs the attack tool; a binary that does not
// would make every attempt fail unconfined and the matrix report nothing
// but "untested".
func preflight(exe string) error {
	p, err := os.StartProcess(exe, []string{exe, AttackArg, "true"}, &os.ProcAttr{Env: []string{}})
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "escape: start the attack tool %s", exe)
	}
	st, err := p.Wait()
	if err != nil || !st.Success() {
		return errs.Unavailablef("escape: %s does not run the attack tool (%s %s true: %v); it must dispatch escape.AttackArg", exe, exe, AttackArg, st)
	}
	return nil
}
