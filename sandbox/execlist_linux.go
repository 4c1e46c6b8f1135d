package sandbox

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/sandbox/boxconf"
	"github.com/airlock-run/airlock/sandbox/landlock"
)

// defaultBoxPATH is the box's search path when its environment has none
// (the mediator's BoxPATH).
const defaultBoxPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// shellPath is the shell airlock runs shell-string calls with (`/bin/sh
// -c`); it is always executable in a walled box.
const shellPath = "/bin/sh"

// maxInterpDepth bounds a chain of interpreters (a script whose #! names a
// script ...): the kernel itself stops at 4 (BINPRM_MAX_RECURSION).
const maxInterpDepth = 4

// helperDirs are the directories a program executes its own helpers from,
// which the policy cannot list by name: everything beneath them may run
// when the program is listed. The table is short and explicit on purpose;
// a program missing from it runs, and only its helpers are refused.
//
//	git          /usr/lib/git-core (`git --exec-path`; Fedora: /usr/libexec)
//	gcc, cc, …   /usr/lib/gcc and /usr/libexec/gcc (cc1, collect2, lto-wrapper)
var helperDirs = map[string][]string{
	"git": {"/usr/lib/git-core", "/usr/libexec/git-core"},
	"gcc": {"/usr/lib/gcc", "/usr/libexec/gcc"},
	"cc":  {"/usr/lib/gcc", "/usr/libexec/gcc"},
	"c++": {"/usr/lib/gcc", "/usr/libexec/gcc"},
	"g++": {"/usr/lib/gcc", "/usr/libexec/gcc"},
	"cpp": {"/usr/lib/gcc", "/usr/libexec/gcc"},
}

// helperProgs are programs a listed program runs by name as part of its
// own work: the C compiler drivers run the assembler and the linker.
var helperProgs = map[string][]string{
	"gcc": {"as", "ld"},
	"cc":  {"as", "ld"},
	"c++": {"as", "ld"},
	"g++": {"as", "ld"},
}

// execPlanner resolves an ExecSpec into the files (and helper directories)
// the box may execute, as host paths; the box sees the host's system at the
// same places.
type execPlanner struct {
	pathEnv string
	workdir string
	paths   map[string]bool
}

// planExecList returns the paths a box with es may execute: each listed
// program found on pathEnv (or at its path), following links to the real
// file, with its ELF interpreter, its #! interpreters (bounded), its helper
// directories, and /bin/sh. A listed program that does not exist is an
// error naming it and where it was looked for.
func planExecList(es *ExecSpec, pathEnv, workdir string) ([]string, error) {
	if pathEnv == "" {
		pathEnv = defaultBoxPATH
	}
	ep := &execPlanner{pathEnv: pathEnv, workdir: workdir, paths: map[string]bool{}}
	if err := ep.file(shellPath, 0); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox: exec allowlist: the shell")
	}
	for _, prog := range es.Programs {
		if err := ep.program(prog); err != nil {
			return nil, err
		}
	}
	out := make([]string, 0, len(ep.paths))
	for p := range ep.paths {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// program adds one shell.allow entry.
func (ep *execPlanner) program(prog string) error {
	var found []string
	if strings.Contains(prog, "/") {
		p := prog
		if !filepath.IsAbs(p) {
			p = filepath.Join(ep.workdir, p)
		}
		p = filepath.Clean(p)
		if err := executable(p); err != nil {
			return errs.NotFoundf("shell.allow: program %q not found at %s (%v); fix the path or remove it from the list", prog, p, err)
		}
		found = []string{p}
	} else {
		found = ep.onPath(prog)
		if len(found) == 0 {
			return errs.NotFoundf("shell.allow: program %q not found on the box's PATH %s; install it or remove it from the list", prog, ep.pathEnv)
		}
	}
	for _, p := range found {
		if err := ep.file(p, 0); err != nil {
			return errs.Wrap(errs.Unavailable, err, "shell.allow: program %q", prog)
		}
	}
	base := filepath.Base(prog)
	for _, d := range helperDirs[base] {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			if r, err := filepath.EvalSymlinks(d); err == nil {
				ep.paths[r] = true
			}
		}
	}
	if base == "go" {
		// The go command runs its compiler and linker from
		// $GOROOT/pkg/tool; GOROOT is the directory above its bin.
		for _, p := range found {
			if r, err := filepath.EvalSymlinks(p); err == nil && filepath.Base(filepath.Dir(r)) == "bin" {
				if tool := filepath.Join(filepath.Dir(filepath.Dir(r)), "pkg", "tool"); isDir(tool) {
					ep.paths[tool] = true
				}
			}
		}
	}
	for _, h := range helperProgs[base] {
		for _, p := range ep.onPath(h) {
			if err := ep.file(p, 0); err != nil {
				return errs.Wrap(errs.Unavailable, err, "shell.allow: %q's helper %q", prog, h)
			}
		}
	}
	return nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// onPath returns the file name runs on the PATH's absolute entries (the
// first executable match, as a shell finds it and as the command reader
// judges it), or nothing.
func (ep *execPlanner) onPath(name string) []string {
	for _, d := range filepath.SplitList(ep.pathEnv) {
		if !filepath.IsAbs(d) {
			continue // a relative entry names the working directory: written files
		}
		if p := filepath.Join(d, name); executable(p) == nil {
			return []string{p}
		}
	}
	return nil
}

// file adds the real file behind p and what the kernel executes to run it:
// an ELF's interpreter (PT_INTERP), a script's #! interpreter.
func (ep *execPlanner) file(p string, depth int) error {
	if depth > maxInterpDepth {
		return fmt.Errorf("%s: interpreters nested more than %d deep", p, maxInterpDepth)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return err
	}
	if ep.paths[real] {
		return nil
	}
	ep.paths[real] = true
	f, err := os.Open(real)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("#!")):
		interp, arg := shebang(head)
		if interp == "" {
			return nil // the kernel refuses it too (ENOEXEC)
		}
		if err := ep.file(interp, depth+1); err != nil {
			return fmt.Errorf("%s: its interpreter: %w", p, err)
		}
		// `#!/usr/bin/env prog` runs prog from the PATH.
		if filepath.Base(interp) == "env" && arg != "" && !strings.HasPrefix(arg, "-") {
			for _, q := range ep.onPath(arg) {
				if err := ep.file(q, depth+1); err != nil {
					return fmt.Errorf("%s: %s: %w", p, arg, err)
				}
			}
		}
	case bytes.HasPrefix(head, []byte(elf.ELFMAG)):
		interp, err := elfInterp(f)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if interp != "" {
			if err := ep.file(interp, depth+1); err != nil {
				return fmt.Errorf("%s: its loader: %w", p, err)
			}
		}
	}
	return nil
}

// shebang reads a #! line as the kernel does: the interpreter, then at
// most one argument (the rest of the line).
func shebang(head []byte) (interp, arg string) {
	line := head[2:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return "", ""
	}
	if len(fields) > 1 {
		arg = fields[1]
	}
	return fields[0], arg
}

// elfInterp returns an ELF file's PT_INTERP, "" for a static program.
func elfInterp(f *os.File) (string, error) {
	ef, err := elf.NewFile(f)
	if err != nil {
		return "", fmt.Errorf("read ELF: %w", err)
	}
	for _, prog := range ef.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		if prog.Filesz > 4096 {
			return "", fmt.Errorf("PT_INTERP of %d bytes", prog.Filesz)
		}
		b := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(b, 0); err != nil {
			return "", fmt.Errorf("read PT_INTERP: %w", err)
		}
		return string(bytes.TrimRight(b, "\x00")), nil
	}
	return "", nil
}

// execWall plans the box's Landlock walls: the exec wall from spec.Exec,
// and the write wall wherever airlock's own code runs in the box anyway
// (the init, or the exec step of a box with an exec wall), so a box
// without either costs nothing more (its mounts are its write wall). On a
// kernel without Landlock it plans nothing and notes it (the mounts still
// hold, and `airlock sandbox check` says so). The walls go to the init's
// configuration, or for a box without an init to the descriptor of the
// exec step, whose command line it returns to put before the command's.
// wdReal is the working directory as bound in the box.
func (p *planner) execWall(wdReal string) (execArgs []string, err error) {
	es := p.spec.Exec
	abi, err := landlock.ABI()
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox: landlock")
	}
	if abi < 1 {
		if es != nil {
			p.box.Notes = append(p.box.Notes, "no exec wall: this kernel has no Landlock, so only the command reader holds shell.allow (see `airlock sandbox check`)")
		}
		return nil, nil
	}
	walls := &boxconf.Walls{}
	if es != nil {
		if walls.Exec, err = p.execList(es, wdReal, abi); err != nil {
			return nil, err
		}
	}
	if !p.direct || walls.Exec != nil || p.listen != nil {
		walls.Write = p.writePaths(wdReal)
		p.box.Notes = append(p.box.Notes, fmt.Sprintf("write wall: Landlock (ABI %d) lets the box write only beneath %s", abi, strings.Join(walls.Write, ", ")))
		if abi >= 6 {
			// bubblewrap (PID 1 of a box without an init) is outside
			// the walls; the init started the command from inside them.
			walls.Scope = true
			p.box.Notes = append(p.box.Notes, "Landlock scopes: the box's processes cannot signal, or reach the abstract Unix sockets of, a process outside the walls")
		}
	}
	if walls.Exec != nil && !es.RunWritten {
		if err := p.sealWritten(walls); err != nil {
			return nil, err
		}
	}
	if walls.Exec == nil && walls.Write == nil {
		return nil, nil
	}
	walls.Listen = p.listen // a direct box with network (net_linux.go)
	walls.Access = boxconf.AccessWord(landlock.Handled(wallRules(walls), abi))
	if !p.direct {
		p.box.config.Walls = walls
		return nil, nil
	}
	walls.Proto = boxconf.Fingerprint() // the exec step's only configuration
	// The command's environment, which bubblewrap does not set: the step
	// itself starts with none (boxconf.Walls.Env).
	walls.Env = append([]string{}, p.spec.Env...)
	data := boxconf.EncodeWalls(walls)
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// The write must not wait for bubblewrap: a pipe holds 64 KiB, and the
	// command's environment can take more; the kernel grows one to its
	// pipe-max-size (1 MiB by default) for anyone.
	if len(data) > 60<<10 {
		if _, err := unix.FcntlInt(wr.Fd(), unix.F_SETPIPE_SZ, len(data)); err != nil {
			r.Close()
			wr.Close()
			return nil, errs.New(errs.Unavailable, "sandbox: the Landlock rules and the environment, %d bytes, do not fit a pipe; pass fewer or smaller variables", len(data))
		}
	}
	_, err = wr.Write(data)
	wr.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	n := p.file(r, true)
	return []string{boxInitPath, InitArg, boxconf.FlagExecWall, strconv.Itoa(n), "--"}, nil
}

// wallRules are the Landlock rules of walls as the in-box code builds them
// (boxinit's applyWalls), without the paths: what they handle
// (boxconf.Walls.Access) depends only on which walls there are.
func wallRules(w *boxconf.Walls) landlock.Rules {
	r := landlock.Rules{WriteWall: w.Write != nil, Scope: w.Scope}
	if w.Exec != nil {
		r.ExecWall, r.Hide = true, w.Exec.Hide
	}
	return r
}

// execList is the exec wall of es.
func (p *planner) execList(es *ExecSpec, wdReal string, abi int) (*boxconf.Exec, error) {
	paths, err := planExecList(es, EnvValue(p.spec.Env, "PATH"), wdReal)
	if err != nil {
		return nil, err
	}
	writable := p.writableBoxDirs(wdReal)
	if !es.RunWritten {
		// The rule is on the file: a listed program the box may rewrite
		// in place would run whatever the box wrote into it.
		for _, x := range paths {
			if w := withinAny(x, writable); w != "" {
				return nil, errs.Invalidf("shell.allow: %s lies in the writable directory %s, so the box could rewrite it and run anything; list a program outside the writable directories, or set shell.run_written: true to accept running what the box writes", x, w)
			}
		}
	} else {
		paths = append(paths, writable...)
		if h := EnvValue(p.spec.Env, "HOME"); filepath.IsAbs(h) && h != "/" {
			paths = append(paths, filepath.Clean(h))
		}
		paths = append(paths, "/tmp", "/var/tmp", "/dev/shm")
	}
	if p.spec.Net != nil && proxyCommandUsers(es.Programs) {
		// git's and ssh's proxy command is the box's in-box code
		// (airlock-connect), the same file as its init, so the rule lets
		// the box run that file's other modes too: it is given only to a
		// list that has a program needing it. With airlock-box those are
		// the in-box modes alone, each of which needs descriptors only
		// airlock hands the box's init; with the airlock binary, they
		// are all of airlock's.
		paths = append(paths, boxInitPath, boxConnPath)
		if p.smallInit {
			p.box.Notes = append(p.box.Notes, "proxy command: the exec wall lets git and ssh run "+BoxBinary+" as their proxy command, which holds only the in-box code (init, exec step, airlock-connect), not the airlock binary and its other modes")
		} else {
			p.box.Notes = append(p.box.Notes, "proxy command: the exec wall lets git and ssh run the airlock binary as their proxy command, and so the box may run airlock's other modes (put "+BoxBinary+" beside airlock to narrow this to the in-box code)")
		}
	}
	what := "only the programs the policy lists (and their loaders and helpers)"
	if es.RunWritten {
		what += " and what the box writes"
	}
	p.box.Notes = append(p.box.Notes, fmt.Sprintf("exec wall: Landlock (ABI %d) lets the box execute %s; any other program fails with Permission denied (exit 126)", abi, what))
	hide := programDirs(EnvValue(p.spec.Env, "PATH"))
	return &boxconf.Exec{Paths: paths, Hide: append(hide, programTrees(hide)...)}, nil
}

// sealWritten has the in-box code make every place the box can write
// noexec (see boxconf.Walls.NoExec): the exec wall holds execve, but the
// dynamic loader, which every listed program needs, maps the file it is
// given with mmap(PROT_EXEC), which Landlock does not check, so a program
// the box wrote would run as `ld.so ./copy-of-rm`, and a library it wrote
// as LD_PRELOAD of a listed program. The kernel refuses both on a noexec
// mount. bubblewrap 0.8 has no noexec option and binds --bind-fd by the
// descriptor's path (so a detached noexec mount cannot be passed in):
// the in-box code is given CAP_SYS_ADMIN and CAP_SETPCAP in the box's user
// namespace, seals the mounts and drops both before the walls. In a box
// without an init that code is the exec step, so it also installs the
// seccomp filter (which forbids mount) in bubblewrap's stead.
func (p *planner) sealWritten(walls *boxconf.Walls) error {
	if p.bw.Setuid && os.Geteuid() != 0 {
		// A setuid bubblewrap refuses --cap-add to anyone but root;
		// without the seal the list would not hold.
		return errs.Unavailablef("sandbox: exec wall: %s is setuid, and it gives the box the capability to make written files non-executable only to root; install a bubblewrap that is not setuid (with unprivileged user namespaces), or set shell.run_written: true", p.bw.Path)
	}
	points := p.noExecPoints()
	p.sealed = true
	if !p.direct {
		for _, m := range points {
			p.sealArgs = append(p.sealArgs, boxconf.FlagSeal, m)
		}
	} else {
		walls.NoExec = points
		opts := p.filterOptions()
		code, err := p.filterCode()
		if err != nil {
			return err
		}
		walls.Seccomp, walls.Ptrace, walls.SetGID, walls.Filter = true, opts.Ptrace, opts.SetGID, code
		p.box.Notes = append(p.box.Notes, "the exec step, not bubblewrap, loads the seccomp filter (after the noexec seal); bubblewrap's reaper runs without it, without capabilities, outside the command's Landlock domain (which keeps the command from tracing it)")
	}
	p.box.Notes = append(p.box.Notes, "written files cannot run: "+strings.Join(points, ", ")+" are mounted noexec, nosuid, nodev (shell.run_written is off)")
	return nil
}

// noExecPoints are the box's mount points the box can write: the private
// temporary directories and HOME (tmpfs), the writable binds (write grants,
// the working directory), and /dev (its tmpfs holds /dev/shm). /run and
// /proc's covers are left: the box cannot write them, and airlock's
// proxy-command binary lies in /run.
func (p *planner) noExecPoints() []string {
	seen := map[string]bool{}
	out := []string{"/dev"}
	seen["/dev"] = true
	for _, o := range p.ops {
		if len(o.args) == 0 || seen[o.dest] {
			continue
		}
		switch o.args[0] {
		case "--tmpfs":
			if within(o.dest, "/run") || within(o.dest, "/proc") {
				continue
			}
		case "--bind-fd", "--bind":
		default:
			continue
		}
		seen[o.dest] = true
		out = append(out, o.dest)
	}
	sort.Strings(out)
	return out
}

// proxyCommandUsers reports whether programs lists git or ssh, which reach
// the egress proxy through a proxy command (GIT_PROXY_COMMAND for git://,
// ssh's ProxyCommand) rather than the proxy variables.
func proxyCommandUsers(programs []string) bool {
	for _, p := range programs {
		switch filepath.Base(p) {
		case "git", "ssh", "scp", "sftp":
			return true
		}
	}
	return false
}

// writePaths are the box paths the write wall leaves writable: the write
// grants in fix mode (and the working directory they cover), the private
// temporary directories and HOME, and the kernel's /dev and /proc (a
// program writes /dev/null, a terminal, /proc/self/...). The box's /run
// is not among them: only airlock's own read-only files are there.
func (p *planner) writePaths(wdReal string) []string {
	out := append(p.writableBoxDirs(wdReal), "/tmp", "/var/tmp", "/dev", "/proc")
	if h := EnvValue(p.spec.Env, "HOME"); filepath.IsAbs(h) && h != "/" {
		out = append(out, filepath.Clean(h))
	}
	return out
}

// writableBoxDirs are the write grants as the box sees them (fix mode
// only), with the working directory when a grant covers it.
func (p *planner) writableBoxDirs(wdReal string) []string {
	if !p.spec.Writable {
		return nil
	}
	var out []string
	for _, w := range p.spec.Write {
		if r, err := filepath.EvalSymlinks(w); err == nil {
			out = append(out, r)
		}
	}
	if withinAny(wdReal, out) != "" {
		out = append(out, wdReal)
	}
	return out
}

func probeLandlock() LandlockReport {
	abi, err := landlock.ABI()
	if err != nil {
		return LandlockReport{Err: err.Error()}
	}
	return LandlockReport{ABI: abi}
}

// landlockFindings says what the host's Landlock means for shell.allow.
func (r *Report) landlockFindings() {
	l := r.Landlock
	switch {
	case l.Err != "":
		r.add(SevWarn, "landlock", "Landlock could not be queried ("+l.Err+"); a policy that lists programs (shell.allow) is held by the command reader only.",
			"Check the kernel's Landlock support (landlock_create_ruleset must answer its version).")
	case l.ABI < 1:
		r.add(SevWarn, "landlock", "this kernel has no Landlock (built without CONFIG_SECURITY_LANDLOCK, or not in the lsm= list), so a tier-1 box cannot let the kernel execute only the programs a policy lists: shell.allow is held by the command reader alone, and the mounts still hold.",
			"Boot a kernel 5.13 or later with CONFIG_SECURITY_LANDLOCK=y and landlock in its LSM list (lsm=landlock,... on the kernel command line).")
	}
}

// programDirs are the box PATH's directories as real paths: where an
// unlisted program is kept from being read (and so loaded by the dynamic
// loader or copied) as well as executed.
func programDirs(pathEnv string) []string {
	if pathEnv == "" {
		pathEnv = defaultBoxPATH
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range filepath.SplitList(pathEnv) {
		if !filepath.IsAbs(d) {
			continue
		}
		r, err := filepath.EvalSymlinks(d)
		if err != nil || r == "/" || seen[r] || !isDir(r) {
			continue
		}
		seen[r] = true
		out = append(out, r)
	}
	return out
}

// programTreeDirs are where a system keeps programs outside the PATH: the
// helpers of other programs (git's, the compiler's, ssh's), daemons, and
// the bin directories of toolchains installed beside their libraries. The
// loader runs any file it can read (`ld.so /usr/lib/git-core/git`), so
// the wall hides these the way it hides the PATH's directories: only what
// the list grants (a listed program's helper directory, a listed file)
// can be read there. They hold programs, not libraries another program
// loads; reading the few data files some keep (systemd's units) is
// refused with them.
var programTreeDirs = []string{
	"/usr/libexec", "/usr/local/libexec",
	"/usr/lib/git-core", "/usr/lib/gcc", "/usr/lib/systemd", "/usr/lib/openssh",
	"/usr/lib/apt", "/usr/lib/dpkg", "/usr/lib/gnupg", "/usr/lib/perf-core",
	"/usr/lib/polkit-1", "/usr/lib/kernel",
	"/usr/lib/llvm-*/bin", "/usr/lib/llvm-*/libexec", "/usr/lib/jvm/*/bin",
	"/usr/lib/postgresql/*/bin", "/usr/local/lib/node_modules/*/bin",
}

// programTrees are programTreeDirs as they exist on this host, as real
// directories, less those in (or equal to) one of hidden already.
func programTrees(hidden []string) []string {
	seen := map[string]bool{}
	for _, h := range hidden {
		seen[h] = true
	}
	var out []string
	for _, pat := range programTreeDirs {
		matches := []string{pat}
		if strings.ContainsRune(pat, '*') {
			matches, _ = filepath.Glob(pat)
		}
		for _, m := range matches {
			r, err := filepath.EvalSymlinks(m)
			if err != nil || r == "/" || seen[r] || !isDir(r) || withinAny(r, hidden) != "" {
				continue
			}
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
