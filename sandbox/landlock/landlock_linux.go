//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6 (handled_access_fs,
// handled_access_net, scoped). The kernel takes a prefix of it: its size is
// passed with it, so older kernels read only the fields they know.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// ABI returns the Landlock ABI version of the running kernel, 0 when it has
// none: not built in (ENOSYS) or not enabled at boot (EOPNOTSUPP). Any other
// answer is an error.
func ABI() (int, error) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch e {
	case 0:
		return int(v), nil
	case unix.ENOSYS, unix.EOPNOTSUPP:
		return 0, nil
	}
	return 0, &Error{Op: "landlock_create_ruleset(VERSION)", Err: e}
}

// Rules are what one ruleset allows. A wall that is off leaves its kind
// of access unrestricted.
type Rules struct {
	// ExecWall restricts execution to the files in Exec and whatever lies
	// beneath the directories there.
	ExecWall bool
	Exec     []string
	// Hide names directories of programs (the PATH's), with ExecWall: a
	// file in one of them that Exec does not list may not even be read,
	// so the dynamic loader cannot be made to load it as its argument
	// (`ld-linux-x86-64.so.2 /usr/bin/rm`) nor a copy be made of it.
	// Everything else stays readable: read access is granted beneath every
	// other entry of the file system, walked from / down to them.
	Hide []string
	// WriteWall restricts writing, creating, removing, renaming and
	// truncating files to beneath the directories in Write.
	WriteWall bool
	Write     []string
	// Scope keeps the process from signalling, and from connecting to the
	// abstract Unix sockets of, any process outside its own ruleset (ABI
	// 6; ignored on older kernels, where the namespaces alone hold it).
	Scope bool
}

// scopeABI is the first ABI with scopes.
const scopeABI = 6

// writeAccess are the write rights of each ABI: 1 has writing, making and
// removing; 2 adds moving between directories (refer); 3 truncation.
func writeAccess(abi int) uint64 {
	w := uint64(unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	if abi >= 2 {
		w |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		w |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	return w
}

// Handled is what Restrict has the kernel handle for r on a kernel of
// Landlock ABI abi: the file-system rights and the scopes. The host sends
// it with the walls it plans, and the in-box code refuses walls its own
// build would handle otherwise (boxconf.Walls.Access): the walls a box
// gets are the ones the host planned and reports.
func Handled(r Rules, abi int) (fs, scoped uint64) {
	if r.ExecWall {
		fs |= unix.LANDLOCK_ACCESS_FS_EXECUTE
		if len(r.Hide) > 0 {
			fs |= unix.LANDLOCK_ACCESS_FS_READ_FILE
		}
	}
	if r.WriteWall {
		fs |= writeAccess(abi)
	}
	if r.Scope && abi >= scopeABI {
		scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	return fs, scoped
}

// Restrict applies r to the calling thread and every process it starts
// from now on. It sets no_new_privs (the kernel requires it of an
// unprivileged caller). Only the calling thread is restricted: the caller
// locks its goroutine to the thread and starts or executes the target from
// it.
//
// A path that does not exist is skipped and returned: what does not exist
// cannot be executed or written, so leaving it out only allows less. Every
// other failure is an error and nothing is applied.
func Restrict(r Rules) (skipped []string, err error) {
	abi, err := ABI()
	if err != nil {
		return nil, err
	}
	if abi < 1 {
		return nil, &Error{Op: "landlock_create_ruleset", Err: unix.EOPNOTSUPP}
	}
	handled, scoped := Handled(r, abi)
	// The kernel opens what it executes for reading too (Hide).
	execGrant := handled & (unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE)
	write := writeAccess(abi)
	attr := rulesetAttr{handledFS: handled, scoped: scoped}
	// Eight bytes (only handled_access_fs, which every ABI has) unless
	// scopes are asked for.
	size := uintptr(8)
	if scoped != 0 {
		size = unsafe.Sizeof(attr)
	}
	if handled == 0 && attr.scoped == 0 {
		return nil, nil
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return nil, &Error{Op: "landlock_create_ruleset", Err: e}
	}
	defer unix.Close(int(fd))
	add := func(paths []string, access uint64) error {
		for _, p := range paths {
			missing, err := addPath(int(fd), p, access)
			if err != nil {
				return err
			}
			if missing {
				skipped = append(skipped, p)
			}
		}
		return nil
	}
	if r.ExecWall {
		if err := add(r.Exec, execGrant); err != nil {
			return nil, err
		}
		if len(r.Hide) > 0 {
			if err := readAllBut(int(fd), r.Hide); err != nil {
				return nil, err
			}
		}
	}
	if r.WriteWall {
		// A file the kernel must read is readable wherever it may be
		// written (the write grants never lie in a hidden directory).
		if err := add(r.Write, write|(handled&unix.LANDLOCK_ACCESS_FS_READ_FILE)); err != nil {
			return nil, err
		}
	}
	return skipped, restrictSelf(int(fd))
}

// RestrictExec is Restrict with only the exec wall.
func RestrictExec(paths, hide []string) (skipped []string, err error) {
	return Restrict(Rules{ExecWall: true, Exec: paths, Hide: hide})
}

// readAllBut grants reading beneath every entry of the file system except
// the directories in hide.
func readAllBut(ruleset int, hide []string) error {
	hidden := map[string]bool{}
	above := map[string]bool{}
	for _, h := range hide {
		h = filepath.Clean(h)
		if !filepath.IsAbs(h) || h == "/" {
			return &Error{Op: "hide", Path: h, Err: unix.EINVAL}
		}
		hidden[h] = true
		for d := filepath.Dir(h); ; d = filepath.Dir(d) {
			above[d] = true
			if d == "/" {
				break
			}
		}
	}
	const read = unix.LANDLOCK_ACCESS_FS_READ_FILE
	var walk func(dir string) error
	walk = func(dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return &Error{Op: "read directory", Path: dir, Err: err}
		}
		for _, e := range ents {
			full := filepath.Join(dir, e.Name())
			switch {
			case e.Type()&os.ModeSymlink != 0:
				// Its target is judged where it lies.
			case above[full]:
				if err := walk(full); err != nil {
					return err
				}
			case hidden[full]:
				// Only what paths lists is readable here. Granting the
				// other files one by one would mean a stat of each of
				// thousands, on every run.
			default:
				if _, err := addPath(ruleset, full, read); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk("/")
}

// addPath adds a path-beneath rule granting access on p.
func addPath(ruleset int, p string, access uint64) (missing bool, err error) {
	pfd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return true, nil
	}
	if err != nil {
		return false, &Error{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(pfd)
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(pfd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if e != 0 {
		return false, &Error{Op: "landlock_add_rule", Path: p, Err: e}
	}
	return false, nil
}

func restrictSelf(ruleset int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return &Error{Op: "prctl(PR_SET_NO_NEW_PRIVS)", Err: err}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); e != 0 {
		return &Error{Op: "landlock_restrict_self", Err: e}
	}
	return nil
}

// Error is a failed Landlock step: the operation, the path it was about
// (if any) and the kernel's answer.
type Error struct {
	Op   string
	Path string
	Err  error
}

func (e *Error) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("landlock: %s %s: %v", e.Op, e.Path, e.Err)
	}
	return fmt.Sprintf("landlock: %s: %v", e.Op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }
