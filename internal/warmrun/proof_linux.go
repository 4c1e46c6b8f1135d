package warmrun

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// A proof is the kernel's word that the caller is no more confined than the
// server in ways /proc does not show, a Landlock domain above all: the
// server holds a fresh secret in a pipe only it has (close-on-exec, in no
// file system), and the caller learns it only by opening
// /proc/<server>/fd/<n> itself. The kernel lets that open through only when
// the caller may read the server's process (ptrace_may_access,
// PTRACE_MODE_READ_FSCREDS), which Landlock refuses to a process whose
// domain is not the server's own or one above it, root or not; Yama governs
// attaching only, not this. The other way round, every /proc/<caller> link
// the server reads (ns, exe, root, cwd) is the same check of the server
// against the caller: the two together hold only for callers in the
// server's own domain. A pipe, not a memfd or a regular file: a pipe's file
// system cannot be mounted, so a Landlock domain's file rules, which would
// refuse the open of a file outside every rule, leave it alone.

// proofLen is the length of a proof's secret, in hex digits.
const proofLen = 32

// proof is one call's secret and the descriptor of the pipe that holds it.
type proof struct {
	fd     int
	secret string
}

// newProof makes a fresh secret and the pipe that holds it; only its read
// end stays open, so nothing else can be written in it.
func newProof() (proof, error) {
	var b [proofLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return proof{fd: -1}, err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return proof{fd: -1}, fmt.Errorf("pipe: %v", err)
	}
	secret := hex.EncodeToString(b[:])
	_, err := unix.Write(p[1], []byte(secret))
	unix.Close(p[1])
	if err != nil {
		unix.Close(p[0])
		return proof{fd: -1}, fmt.Errorf("write the proof: %v", err)
	}
	return proof{fd: p[0], secret: secret}, nil
}

func (p proof) close() {
	if p.fd >= 0 {
		unix.Close(p.fd)
	}
}

// readProof is the secret the server at pid holds at descriptor fd, read
// through /proc as the kernel allows this process (not opened at all when
// it may not read the server's process).
func readProof(pid, fd int) (string, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd)
	// O_NONBLOCK: the open of a pipe's read end waits for a writer
	// otherwise, and the server has none.
	f, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(f)
	b := make([]byte, proofLen+1)
	n, err := unix.Read(f, b)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if n != proofLen {
		return "", fmt.Errorf("read %s: %d bytes, not a proof", path, n)
	}
	return string(b[:n]), nil
}

// serverPid is the pid of the process listening on the other end of c, as
// the kernel names it (SO_PEERCRED).
func serverPid(c *net.UnixConn) (int, error) {
	p, err := peerOf(c, false)
	if err != nil {
		return 0, err
	}
	return p.pid, nil
}

// answerProof is the secret of the proof the server on c holds at fd.
func answerProof(c *net.UnixConn, fd int) (string, error) {
	pid, err := serverPid(c)
	if err != nil {
		return "", err
	}
	return readProof(pid, fd)
}

// confinedFrom reports whether this process may not read the /proc entries
// of the server on c (EACCES, where a process in another namespace would
// read them): it is confined apart from the server, as by a Landlock domain
// the server is not in.
func confinedFrom(c *net.UnixConn) bool {
	pid, err := serverPid(c)
	if err != nil {
		return false
	}
	var st unix.Stat_t
	return errors.Is(unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/user", &st), unix.EACCES)
}

// warnUndumpable says so when this process is not dumpable (started
// setuid or with file capabilities): the kernel then lets no caller without
// CAP_SYS_PTRACE read its process, so none can read a proof, and every
// such call runs cold.
func warnUndumpable(log *slog.Logger) {
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err == nil && d != 1 {
		log.Warn("warm: this process is not dumpable: callers without CAP_SYS_PTRACE cannot prove they may read it, and run cold")
	}
}
