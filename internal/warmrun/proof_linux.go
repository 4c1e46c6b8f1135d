package warmrun

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"

	"github.com/airlock-run/airlock/internal/warmhand"
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

// proof is one call's secret and the descriptor of the pipe that holds it.
type proof struct {
	fd     int
	secret string
}

// newProof makes a fresh secret and the pipe that holds it; only its read
// end stays open, so nothing else can be written in it.
func newProof() (proof, error) {
	var b [warmhand.ProofLen / 2]byte
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

// warnUndumpable says so when this process is not dumpable (started
// setuid or with file capabilities): the kernel then lets no caller without
// CAP_SYS_PTRACE read its process, so none can read a proof, and every
// such call runs cold.
func warnUndumpable(log *slog.Logger) {
	if d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err == nil && d != 1 {
		log.Warn("warm: this process is not dumpable: callers without CAP_SYS_PTRACE cannot prove they may read it, and run cold")
	}
}
