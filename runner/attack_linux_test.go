package runner

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// attackArg makes the test binary an attack tool: inside the box it is the
// same file bubblewrap runs as the init, so attacks are Go code and need
// nothing of the host. An attack exits 0 when it reached its target, 1 when
// it was held, printing what happened either way.
const attackArg = "__airlock-test-attack"

func attackMain(args []string) int {
	if len(args) == 0 {
		fmt.Println("no attack")
		return 2
	}
	err := attack(args[0], args[1:])
	if err != nil {
		fmt.Println("held:", err)
		return 1
	}
	fmt.Println("reached")
	return 0
}

// openUnfiltered opens /proc/PID/mem of a process with no seccomp filter.
func openUnfiltered(pid string) error {
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return err
	}
	if !strings.Contains(string(status), "Seccomp:\t0") {
		return fmt.Errorf("process %s is under a seccomp filter", pid)
	}
	f, err := os.Open("/proc/" + pid + "/mem")
	if err != nil {
		return err
	}
	return f.Close()
}

func attack(name string, args []string) error {
	switch name {
	case "read":
		// read FILE: read a file that was not granted.
		_, err := os.ReadFile(args[0])
		return err
	case "write":
		// write FILE: create or append to a file.
		f, err := os.OpenFile(args[0], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString("attack\n")
		return err
	case "mkdir-write":
		// mkdir-write DIR FILE: create a directory and a file in it.
		if err := os.Mkdir(args[0], 0o755); err != nil {
			return err
		}
		return os.WriteFile(args[0]+"/"+args[1], []byte("attack\n"), 0o644)
	case "rename-aside":
		// rename-aside DIR NAME: move DIR away, recreate it, write NAME.
		if err := os.Rename(args[0], args[0]+".aside"); err != nil {
			return err
		}
		if err := os.Mkdir(args[0], 0o755); err != nil {
			return err
		}
		return os.WriteFile(args[0]+"/"+args[1], []byte("attack\n"), 0o644)
	case "userns":
		// userns: create a user namespace (a child with CLONE_NEWUSER).
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		return cmd.Run()
	case "tcp":
		// tcp ADDR: connect to a canary.
		c, err := net.DialTimeout("tcp", args[0], 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 6)
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := c.Read(buf)
		if err != nil {
			return err
		}
		if string(buf[:n]) != "canary" {
			return fmt.Errorf("reached something that is not the canary: %q", buf[:n])
		}
		return nil
	case "environ":
		// environ PID: read another process's environment.
		data, err := os.ReadFile("/proc/" + args[0] + "/environ")
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return fmt.Errorf("empty environment")
		}
		return nil
	case "parent-mem":
		// parent-mem: take over the parent or read what it holds: its
		// memory when it runs without a seccomp filter (code put there
		// would run unfiltered), or an environment with anything the
		// attacker's own lacks.
		ppid := strconv.Itoa(os.Getppid())
		if env, err := os.ReadFile("/proc/" + ppid + "/environ"); err == nil {
			own := map[string]bool{}
			for _, kv := range os.Environ() {
				own[kv] = true
			}
			for _, kv := range strings.Split(string(env), "\x00") {
				if kv != "" && !own[kv] {
					return nil
				}
			}
		}
		return openUnfiltered(ppid)
	case "procs-mem":
		// procs-mem: open the memory of any process in sight that runs
		// without a seccomp filter.
		ents, _ := os.ReadDir("/proc")
		self := os.Getpid()
		var tried []string
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			err = openUnfiltered(e.Name())
			if err == nil {
				return nil
			}
			tried = append(tried, e.Name()+": "+err.Error())
		}
		return fmt.Errorf("no unfiltered process's memory opened (%v)", tried)
	case "dirfd":
		// dirfd: find an inherited directory descriptor, a way around the
		// box's mounts (openat from a host directory resolves on the host).
		for fd := 3; fd < 1024; fd++ {
			var st unix.Stat_t
			if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				if _, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0); err == nil {
					return nil
				}
			}
		}
		return fmt.Errorf("no inherited directory descriptor")
	case "fd":
		// fd N: use a descriptor inherited from airlock's caller.
		n, _ := strconv.Atoi(args[0])
		buf := make([]byte, 16)
		_, err := unix.Pread(n, buf, 0)
		return err
	case "orphan":
		// orphan SECONDS: leave a process behind in a session of its own.
		cmd := exec.Command("sleep", args[0])
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		return cmd.Start()
	case "setuid":
		// setuid FILE: make a set-user-ID file.
		if err := os.WriteFile(args[0], []byte("#!/bin/sh\n"), 0o755); err != nil {
			return err
		}
		if err := unix.Chmod(args[0], 0o4755); err != nil {
			return err
		}
		st, err := os.Stat(args[0])
		if err != nil {
			return err
		}
		if st.Mode()&os.ModeSetuid == 0 {
			return fmt.Errorf("the set-user-ID bit did not stick")
		}
		return nil
	case "sysctl":
		// sysctl: write a kernel tunable (its own value back).
		p := "/proc/sys/kernel/domainname"
		v, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, v, 0)
	case "sysrq":
		return os.WriteFile("/proc/sysrq-trigger", []byte("h"), 0)
	case "alloc":
		// alloc MB: allocate and touch memory.
		n, _ := strconv.Atoi(args[0])
		bufs := make([][]byte, 0, n)
		for i := 0; i < n; i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			bufs = append(bufs, b)
		}
		return nil
	case "fork":
		// fork N: start N processes at once.
		n, _ := strconv.Atoi(args[0])
		var cmds []*exec.Cmd
		defer func() {
			for _, c := range cmds {
				c.Process.Kill()
				c.Wait()
			}
		}()
		for i := 0; i < n; i++ {
			c := exec.Command("sleep", "5")
			if err := c.Start(); err != nil {
				return fmt.Errorf("process %d: %w", i, err)
			}
			cmds = append(cmds, c)
		}
		return nil
	case "spin":
		// spin MS: burn CPU for a second of wall time; reached when it got
		// more than MS milliseconds of it.
		cpu := func() time.Duration {
			var ru unix.Rusage
			unix.Getrusage(unix.RUSAGE_SELF, &ru)
			return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		// Only the spin counts, not the program's own start.
		before := cpu()
		end := time.Now().Add(time.Second)
		x := 0
		for time.Now().Before(end) {
			x++
		}
		used := cpu() - before
		fmt.Printf("cpu %v in 1s (%d)\n", used, x%2)
		ms, _ := strconv.Atoi(args[0])
		if used < time.Duration(ms)*time.Millisecond {
			return fmt.Errorf("only %v of CPU in one second", used)
		}
		return nil
	case "mknod":
		// mknod PATH: make a device node (/dev/null's numbers).
		return unix.Mknod(args[0], unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
	case "kill":
		// kill PID: signal a process of the host.
		n, _ := strconv.Atoi(args[0])
		return unix.Kill(n, 0)
	case "ptrace":
		// ptrace PID: attach to a process of the host.
		n, _ := strconv.Atoi(args[0])
		if err := unix.PtraceAttach(n); err != nil {
			return err
		}
		var ws unix.WaitStatus
		unix.Wait4(n, &ws, 0, nil)
		return unix.PtraceDetach(n)
	}
	if f, ok := channelAttacks[name]; ok {
		return f(args)
	}
	return fmt.Errorf("unknown attack %q", name)
}
