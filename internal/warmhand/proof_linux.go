package warmhand

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// ProofLen is the length of the secret a challenge names, in hex digits.
const ProofLen = 32

// ReadProof is the secret the server on the connected socket fd holds at
// its descriptor n (a challenge's Fd), read through /proc/<server>/fd/<n>.
// The kernel lets that open through only when this process may read the
// server's process (ptrace's read check), which a Landlock domain the
// server is not in refuses: the server takes the secret as its proof that
// no such domain stands between them (internal/warmrun describes it).
func ReadProof(fd, n int) (string, error) {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return "", err
	}
	path := "/proc/" + strconv.Itoa(int(cred.Pid)) + "/fd/" + strconv.Itoa(n)
	// O_NONBLOCK: the open of a pipe's read end waits for a writer
	// otherwise, and the server keeps none.
	f, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if err != nil {
		return "", &proofError{"open " + path, err}
	}
	defer syscall.Close(f)
	b := make([]byte, ProofLen+1)
	got, err := syscall.Read(f, b)
	if err != nil {
		return "", &proofError{"read " + path, err}
	}
	if got != ProofLen {
		return "", &proofError{"read " + path, errors.New(strconv.Itoa(got) + " bytes, not a proof")}
	}
	return string(b[:got]), nil
}

type proofError struct {
	op  string
	err error
}

func (e *proofError) Error() string { return e.op + ": " + e.err.Error() }
func (e *proofError) Unwrap() error { return e.err }

// confinedFrom reports whether this process may not read the /proc entries
// of the server on fd (EACCES, where a process in another namespace would
// read them): it is confined apart from the server, as by a Landlock domain
// the server is not in. Only a server of this user counts: a stranger's
// entries are as closed to a process without CAP_SYS_PTRACE, and a
// stranger's server is warned of, not taken for this user's own.
func confinedFrom(fd int) bool {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil || int(cred.Uid) != os.Geteuid() {
		return false
	}
	var st syscall.Stat_t
	return errors.Is(syscall.Stat("/proc/"+strconv.Itoa(int(cred.Pid))+"/ns/user", &st), syscall.EACCES)
}
