package sandbox

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/errs"
)

// BoxBinary is the name of the small in-box binary (cmd/airlock-box) that
// the box runs as its init and exec step, and as git's and ssh's proxy
// command, when it lies beside the airlock binary and only its owner may
// change it. It links the in-box code alone, so it starts in a fraction of
// the airlock binary's time, and a box let run its proxy command can run
// none of airlock's other modes.
const BoxBinary = "airlock-box"

// boxBin is the decision, made once per airlock binary per process, of
// what the box runs inside itself: the airlock-box beside exe, held open
// since it was checked (so no file swapped in later is what gets bound),
// or nothing, with why the one beside was passed over.
type boxBin struct {
	pn   *pinned // nil: the airlock binary itself
	path string  // the path beside exe
	why  string  // why pn is nil ("" when there is none beside)
}

// naiveBoxBin, set only by this package's tests, takes the file beside
// exe unchecked: the shape the checks below replace, for the attack tests
// to show a planted file running first.
var naiveBoxBin bool

var boxBins struct {
	sync.Mutex
	m map[string]*boxBin
}

// boxBinFor is the in-box binary decided for the airlock binary exe.
func boxBinFor(exe string) *boxBin {
	boxBins.Lock()
	defer boxBins.Unlock()
	if b, ok := boxBins.m[exe]; ok {
		return b
	}
	b := chooseBoxBin(exe)
	if boxBins.m == nil {
		boxBins.m = map[string]*boxBin{}
	}
	boxBins.m[exe] = b
	return b
}

// chooseBoxBin checks the airlock-box beside exe (exe's links resolved)
// as airlock checks any program the host runs for it, and the more so as
// every box runs this one: a regular, executable file, owned by root or
// this user and writable by no one else, in directories of theirs that no
// one else may change (a sticky one, like /tmp, excepted above the first),
// and lying neither in or under the working directory nor (checked per
// plan, boxMayWrite) in a directory a box may write or was let write. It
// must be a file of
// its own in exe's real directory, not a link: that directory is one no
// box may write (a box that could is refused, pinInit), while a link's
// target may lie where a box of another run wrote it in place, and a link
// on the way where one re-points it. For the same reason it must have no
// other name (a hard link), which could lie where a box writes. And it
// must be a static ELF executable (staticELF): one built with cgo is
// passed over for the airlock binary, which the plan's notes say.
func chooseBoxBin(exe string) *boxBin {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		real = exe
	}
	b := &boxBin{path: filepath.Join(filepath.Dir(real), BoxBinary)}
	if _, err := os.Lstat(b.path); err != nil {
		return b
	}
	// The working directory is where a box most often writes; a process
	// working in / (a service) names no such place. Each box's own
	// writable places and working directory, and the paths its kernel's
	// boxes were let write, are weighed at its plan (pinInit): this
	// choice is made once per process, for every kernel in it.
	var refused []string
	if wd, err := os.Getwd(); err == nil && resolved(wd) != "/" {
		refused = []string{wd, resolved(wd)}
	}
	if naiveBoxBin {
		refused = nil
	}
	pn, err := pin(b.path, refused)
	if err == nil && !naiveBoxBin {
		err = trustedBoxBin(b.path, pn, refused)
		if err != nil {
			pn.f.Close()
		}
	}
	if err != nil {
		b.why = err.Error()
		return b
	}
	b.pn = pn
	return b
}

// trustedBoxBin checks the pinned file and the directories of both its
// spelled path and its resolved one.
func trustedBoxBin(path string, pn *pinned, refused []string) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(pn.f.Fd()), &st); err != nil {
		return err
	}
	if pn.real != filepath.Clean(path) {
		return fmt.Errorf("%s is a link to %s; put the file itself beside the airlock binary", path, pn.real)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file", pn.real)
	}
	if st.Nlink != 1 {
		return fmt.Errorf("%s has %d names (hard links); one elsewhere may lie where a box writes: make it a copy of its own", pn.real, st.Nlink)
	}
	if err := ownedOnly(pn.real, st.Uid, st.Mode); err != nil {
		return err
	}
	if st.Mode&0o111 == 0 {
		return fmt.Errorf("%s is not executable", pn.real)
	}
	for _, p := range []string{filepath.Clean(path), pn.real} {
		if w := withinAnyFile(p, refused); w != "" {
			return fmt.Errorf("%s lies in %s, the working directory or a directory a box may write", p, w)
		}
		if err := ownedDirs(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return staticELF(pn)
}

// maxDynamic bounds what is read of a PT_DYNAMIC segment: a static Go
// binary's (built as a position-independent executable) holds a few
// dozen entries.
const maxDynamic = 1 << 20

// staticELF refuses what is not a statically linked ELF executable: a
// program interpreter (PT_INTERP) or a shared library it needs (DT_NEEDED
// in PT_DYNAMIC) means cgo was on when it was built. Such an airlock-box
// works, but the dynamic loader links it on every box's start, twice the
// time of a static one, and it depends on the box's /lib as well. Only the
// program headers are read (a stripped binary has no sections), through
// the pinned file itself, so what is judged is what would be bound.
func staticELF(pn *pinned) error {
	f, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", pn.f.Fd()))
	if err != nil {
		return fmt.Errorf("%s: open to read its ELF headers: %v", pn.real, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Dev != pn.dev || st.Ino != pn.ino {
		return fmt.Errorf("%s changed while its ELF headers were read", pn.real)
	}
	const fix = "build it with CGO_ENABLED=0 (CGO_ENABLED=0 go build -o airlock-box ./cmd/airlock-box, as scripts/setup.sh does)"
	ef, err := elf.NewFile(f)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable (%v); %s", pn.real, err, fix)
	}
	for _, prog := range ef.Progs {
		switch prog.Type {
		case elf.PT_INTERP:
			return fmt.Errorf("%s is dynamically linked (it names a program interpreter, built with cgo): it starts twice as slowly; %s", pn.real, fix)
		case elf.PT_DYNAMIC:
			needs, err := needsLibraries(ef, prog)
			if err != nil {
				return fmt.Errorf("%s: read its dynamic section: %v", pn.real, err)
			}
			if needs {
				return fmt.Errorf("%s is dynamically linked (it needs shared libraries, built with cgo): it starts twice as slowly; %s", pn.real, fix)
			}
		}
	}
	return nil
}

// needsLibraries reports whether the dynamic segment prog of ef has a
// DT_NEEDED entry.
func needsLibraries(ef *elf.File, prog *elf.Prog) (bool, error) {
	if prog.Filesz > maxDynamic {
		return false, fmt.Errorf("%d bytes, over %d", prog.Filesz, maxDynamic)
	}
	data := make([]byte, prog.Filesz)
	if _, err := prog.ReadAt(data, 0); err != nil {
		return false, err
	}
	size := 16 // d_tag and d_val, 8 bytes each
	if ef.Class == elf.ELFCLASS32 {
		size = 8
	}
	for off := 0; off+size <= len(data); off += size {
		var tag uint64
		if size == 16 {
			tag = ef.ByteOrder.Uint64(data[off:])
		} else {
			tag = uint64(ef.ByteOrder.Uint32(data[off:]))
		}
		switch elf.DynTag(tag) {
		case elf.DT_NULL:
			return false, nil
		case elf.DT_NEEDED:
			return true, nil
		}
	}
	return false, nil
}

// ownedOnly refuses what someone other than root or this user owns, or
// group or others may write.
func ownedOnly(p string, uid, mode uint32) error {
	if uid != 0 && int(uid) != os.Geteuid() {
		return fmt.Errorf("%s is uid %d's, neither root's nor this user's", p, uid)
	}
	if mode&0o022 != 0 {
		return fmt.Errorf("%s may be written by its group or others", p)
	}
	return nil
}

// ownedDirs checks dir and every directory above it with ownedOnly; above
// the first, a sticky directory (like /tmp) that others may write is let
// pass, as no one may move another's entry out of it.
func ownedDirs(dir string) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	for d, first := filepath.Clean(real), true; ; d, first = filepath.Dir(d), false {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return err
		}
		mode := st.Mode
		if !first && mode&unix.S_ISVTX != 0 {
			mode &^= 0o022
		}
		if err := ownedOnly(d, st.Uid, mode); err != nil {
			return err
		}
		if d == "/" {
			return nil
		}
	}
}

// pinInit pins what the box runs inside itself for the airlock binary exe
// and says which in the box's notes: the airlock-box beside exe when it
// passed boxBinFor's checks and lies outside what this box may write, else
// exe itself. exe is pinned and checked either way: the host runs it too
// (the guard, tier 2's launcher), and a box that could write it would own
// the next run.
func (p *planner) pinInit(exe string) (*pinned, error) {
	ex, err := pin(exe, p.writable)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "sandbox: airlock binary")
	}
	// Only a writable box can write it: the directories above it are
	// stat (withinAnyFile) only for one.
	if w := p.writableHolds(ex.real); w != "" {
		ex.f.Close()
		return nil, p.refuse(exe, "the airlock binary lies inside the writable directory "+w+"; install it elsewhere")
	}
	b := boxBinFor(exe)
	why := b.why
	if b.pn != nil {
		if w := p.boxMayWrite(b.path, b.pn.real); w != "" && !naiveBoxBin {
			why = w
		} else if dup, err := unix.FcntlInt(b.pn.f.Fd(), unix.F_DUPFD_CLOEXEC, 0); err != nil {
			why = "duplicate its descriptor: " + err.Error()
		} else {
			ex.f.Close()
			p.smallInit = true
			p.box.initBin = b.pn.real
			p.box.Notes = append(p.box.Notes, "in-box code: "+BoxBinary+" ("+b.pn.real+"), which runs only the box's init, exec step and proxy command, not the airlock binary")
			return &pinned{f: os.NewFile(uintptr(dup), b.pn.real), real: b.pn.real, dev: b.pn.dev, ino: b.pn.ino, mode: b.pn.mode}, nil
		}
	}
	p.box.initBin = ex.real
	if why != "" {
		p.box.Notes = append(p.box.Notes, "in-box code: the airlock binary itself; "+b.path+" was passed over: "+why)
	}
	return ex, nil
}

// boxMayWrite says which of paths lies where this box may write or works
// (its working directory, in either spelling) or where a box of any kernel
// of this process may write or was let write (Spec.Caches: the
// airlock-box is pinned once for all of them), "" when none does.
func (p *planner) boxMayWrite(paths ...string) string {
	dirs := append(append([]string(nil), p.writable...), filepath.Clean(p.spec.Workdir), resolved(p.spec.Workdir))
	fd := newFileDirs(append(dirs, p.spec.Caches.boxWritable()...))
	for i, x := range paths {
		if slices.Contains(paths[:i], x) {
			continue // the same file weighs the same (a file of its own, not a link, most often)
		}
		if w := fd.within(filepath.Clean(x)); w != "" {
			return x + " lies in " + w + ", which this box may write or works in, or a box of this or another kernel of this process may write or was let write"
		}
	}
	return ""
}

// writableHolds is withinAnyFile(path, p.writable) for a box that may
// write, "" for one that may not: an observing box's list names the
// grants and the working directory it would write in fix mode, where
// it writes nothing now.
func (p *planner) writableHolds(path string) string {
	if !p.spec.Writable {
		return ""
	}
	return withinAnyFile(path, p.writable)
}

// InitBinary is the file a box planned for the airlock binary exe runs
// inside itself, and whether it is the small airlock-box: what boxBinFor
// decided for exe, before any one box's writable directories are weighed.
func InitBinary(exe string) (path string, small bool) {
	if b := boxBinFor(exe); b.pn != nil {
		return b.pn.real, true
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		return real, false
	}
	return exe, false
}
