//go:build linux

package escape

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-run/airlock/sandbox/seccomp"
)

// AttackMain runs one attack (args[0]) with its arguments and returns 0 when
// it believes it reached its target, 1 when it was stopped, 2 on a usage
// mistake. What it read or met goes to stdout, where the matrix looks for the
// run's secret token; the exit status is only trusted for attacks whose
// target leaves no token (a system call, a limit).
func AttackMain(args []string) int {
	if len(args) == 0 {
		fmt.Println("usage: attack NAME ARGS...")
		return 2
	}
	fn, ok := attacks[args[0]]
	if !ok {
		fmt.Printf("unknown attack %q\n", args[0])
		return 2
	}
	if err := fn(args[1:]); err != nil {
		fmt.Println("stopped:", err)
		return 1
	}
	fmt.Println("reached")
	return 0
}

var attacks map[string]func([]string) error

func init() {
	// Assigned in init: some attacks start this program again.
	attacks = map[string]func([]string) error{
		"read":          attackRead,
		"symlink-read":  func(a []string) error { return linkThen(os.Symlink, a[0], a[1], readOut) },
		"hardlink-read": func(a []string) error { return linkThen(os.Link, a[0], a[1], readOut) },
		"write":         func(a []string) error { return writeMarker(a[0], a[1]) },
		"symlink-write": func(a []string) error {
			return linkThen(os.Symlink, a[0], a[1], func(p string) error { return writeMarker(p, a[2]) })
		},
		"hardlink-write": func(a []string) error {
			return linkThen(os.Link, a[0], a[1], func(p string) error { return writeMarker(p, a[2]) })
		},
		"mkdir-write":   func(a []string) error { os.MkdirAll(a[0], 0o755); return writeMarker(a[0]+"/"+a[1], a[2]) },
		"rename-aside":  attackRenameAside,
		"tcp":           func(a []string) error { return dialRead("tcp", a[0], nil) },
		"udp":           func(a []string) error { return dialRead("udp", a[0], []byte("ping")) },
		"dns-udp":       func(a []string) error { return dialRead("udp", a[0], dnsQuery("canary.test")) },
		"dns-tcp":       func(a []string) error { return dialRead("tcp", a[0], tcpDNS(dnsQuery("canary.test"))) },
		"unix":          func(a []string) error { return dialRead("unix", a[0], nil) },
		"proxy-connect": attackProxyConnect,
		"proxy-get":     attackProxyGet,
		"raw":           attackRaw,
		"signal":        attackSignal,
		"linger":        attackLinger,
		"fds":           attackFds,
		"tiocsti":       attackTIOCSTI,
		"probe":         attackProbe,
		"userns":        attackUserns,
		"mount":         attackMount,
		"hog":           attackHog,
		"fork":          attackFork,
		"spin":          attackSpin,
		"sleep":         attackSleep,
		"child-mem":     attackChildMem,
		"read-some":     attackReadSome,
		// Helpers the attacks and the matrix start: not attacks.
		"idle":   helperIdle,
		"victim": helperVictim,
		"true":   func([]string) error { return nil },
	}
}

func need(a []string, n int) error {
	if len(a) < n {
		return fmt.Errorf("want %d arguments, got %d", n, len(a))
	}
	return nil
}

// attackRead reads each path and prints what it got.
func attackRead(a []string) error {
	var last error
	for _, p := range a {
		if err := readOut(p); err != nil {
			last = err
			continue
		}
		return nil
	}
	if last == nil {
		last = errors.New("no path given")
	}
	return last
}

func readOut(p string) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	fmt.Printf("read %s: %q\n", p, b)
	return nil
}

func linkThen(link func(old, new string) error, target, name string, then func(string) error) error {
	if err := link(target, name); err != nil {
		return err
	}
	return then(name)
}

func writeMarker(p, marker string) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(marker + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// attackRenameAside moves a protected directory's parent away, makes a new
// one and writes the protected file inside it: rename DIR NAME MARKER.
func attackRenameAside(a []string) error {
	if err := need(a, 3); err != nil {
		return err
	}
	if err := os.Rename(a[0], a[0]+".aside"); err != nil {
		return err
	}
	if err := os.MkdirAll(a[0]+"/"+a[1][:strings.LastIndex(a[1], "/")+1], 0o755); err != nil {
		return err
	}
	return writeMarker(a[0]+"/"+a[1], a[2])
}

// dialRead connects, sends hello if any, and prints what comes back.
func dialRead(network, addr string, hello []byte) error {
	if strings.HasPrefix(addr, "@") {
		addr = "\x00" + addr[1:] // abstract socket
	}
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if hello != nil {
		if _, err := c.Write(hello); err != nil {
			return err
		}
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	b := make([]byte, 512)
	n, err := c.Read(b)
	if n == 0 {
		return fmt.Errorf("nothing came back: %v", err)
	}
	fmt.Printf("%s %s answered: %q\n", network, strings.ReplaceAll(addr, "\x00", "@"), b[:n])
	return nil
}

// dnsQuery is a DNS query for name's TXT record.
func dnsQuery(name string) []byte {
	q := []byte{0xa1, 0x2b, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, l := range strings.Split(name, ".") {
		q = append(q, byte(len(l)))
		q = append(q, l...)
	}
	return append(q, 0, 0, 16, 0, 1)
}

func tcpDNS(q []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(q))), q...)
}

func proxyURL() (*url.URL, error) {
	for _, k := range []string{"HTTP_PROXY", "http_proxy"} {
		if v := os.Getenv(k); v != "" {
			return url.Parse(v)
		}
	}
	return nil, errors.New("no HTTP proxy in the environment")
}

// attackProxyConnect asks the HTTP proxy for a tunnel to HOST:PORT and
// prints what the far end says.
func attackProxyConnect(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	pu, err := proxyURL()
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", pu.Host, 3*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", a[0], a[0])
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("proxy answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	b := make([]byte, 512)
	n, err := br.Read(b)
	if n == 0 {
		return fmt.Errorf("tunnel open, nothing came back: %v", err)
	}
	fmt.Printf("tunnel to %s answered: %q\n", a[0], b[:n])
	return nil
}

// attackProxyGet fetches a URL through the HTTP proxy, following redirects.
func attackProxyGet(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	pu, err := proxyURL()
	if err != nil {
		return err
	}
	cl := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	resp, err := cl.Get(a[0])
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Printf("GET %s -> %s (%s): %q\n", a[0], resp.Status, resp.Request.URL, body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

func attackRaw([]string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	if err != nil {
		return err
	}
	unix.Close(fd)
	fmt.Println("raw socket opened")
	return nil
}

func attackSignal(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	pid, err := strconv.Atoi(a[0])
	if err != nil {
		return err
	}
	return unix.Kill(pid, unix.SIGUSR1)
}

// attackLinger leaves a process behind in a session of its own, carrying
// the marker in its arguments so the matrix can find it on the host.
func attackLinger(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	p, err := os.StartProcess(exe, []string{exe, AttackArg, "idle", "20", a[0]}, &os.ProcAttr{Sys: &syscall.SysProcAttr{Setsid: true}})
	if err != nil {
		return err
	}
	p.Release()
	return nil
}

func attackFds([]string) error {
	found := false
	for fd := 3; fd < 1024; fd++ {
		b := make([]byte, 256)
		n, err := unix.Pread(fd, b, 0)
		if err != nil || n == 0 {
			continue
		}
		found = true
		fmt.Printf("fd %d: %q\n", fd, b[:n])
	}
	if !found {
		return errors.New("no readable inherited descriptor")
	}
	return nil
}

// attackTIOCSTI pushes TEXT into every terminal it can reach: its standard
// descriptors and /dev/tty.
func attackTIOCSTI(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	fds := []int{0, 1, 2}
	if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		defer f.Close()
		fds = append(fds, int(f.Fd()))
	}
	var last error = errors.New("no terminal")
	for _, fd := range fds {
		ok := true
		for _, c := range []byte(a[0] + "\n") {
			b := c
			if err := unix.IoctlSetPointerInt(fd, unix.TIOCSTI, int(b)); err != nil {
				// IoctlSetPointerInt passes an int; TIOCSTI reads one byte of
				// it, the low one on little-endian machines.
				last, ok = fmt.Errorf("fd %d: %w", fd, err), false
				break
			}
		}
		if ok {
			fmt.Printf("pushed into fd %d\n", fd)
			return nil
		}
	}
	return last
}

func attackProbe(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	for _, p := range seccomp.Probes(seccomp.Options{}) {
		if p.Name != a[0] {
			continue
		}
		e := p.Call()
		fmt.Printf("%s: %s\n", p.Name, errnoText(e))
		if p.Held(e) {
			return fmt.Errorf("answered %s", errnoText(e))
		}
		return nil
	}
	return fmt.Errorf("no probe %q on %s", a[0], runtime.GOARCH)
}

func errnoText(e unix.Errno) string {
	if e == 0 {
		return "success"
	}
	return unix.ErrnoName(e)
}

func startSelf(sys *syscall.SysProcAttr, args ...string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	p, err := os.StartProcess(exe, append([]string{exe, AttackArg}, args...), &os.ProcAttr{Sys: sys})
	if err != nil {
		return err
	}
	st, err := p.Wait()
	if err != nil {
		return err
	}
	if !st.Success() {
		return fmt.Errorf("child: %v", st)
	}
	return nil
}

func attackUserns([]string) error {
	return startSelf(&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}, "true")
}

func attackMount(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	if err := unix.Mount("airlock-escape", a[0], "tmpfs", 0, "size=1m"); err != nil {
		return err
	}
	fmt.Println("mounted a tmpfs on", a[0])
	return unix.Unmount(a[0], 0)
}

func attackHog(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	n, _ := strconv.Atoi(a[0])
	var keep [][]byte
	for i := 0; i < n; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
	fmt.Printf("allocated %d MiB\n", n)
	return nil
}

// attackFork starts N idle children carrying MARKER: fork N MARKER.
func attackFork(a []string) error {
	if err := need(a, 2); err != nil {
		return err
	}
	n, _ := strconv.Atoi(a[0])
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	started := 0
	for i := 0; i < n; i++ {
		p, err := os.StartProcess(exe, []string{exe, AttackArg, "idle", "5", a[1]}, &os.ProcAttr{})
		if err != nil {
			break
		}
		p.Release()
		started++
	}
	fmt.Printf("started %d of %d\n", started, n)
	if started < n {
		return fmt.Errorf("only %d of %d processes started", started, n)
	}
	return nil
}

// attackSpin burns CPU on every core for MS milliseconds of wall time and
// reports the cores it got; it reached when it got more than WANT cores.
func attackSpin(a []string) error {
	if err := need(a, 2); err != nil {
		return err
	}
	ms, _ := strconv.Atoi(a[0])
	want, _ := strconv.ParseFloat(a[1], 64)
	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start, c0 := time.Now(), cpu()
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for time.Since(start) < time.Duration(ms)*time.Millisecond {
				for i := 0; i < 1e5; i++ {
					x += i
				}
			}
			runtime.KeepAlive(x)
		}()
	}
	wg.Wait()
	got := float64(cpu()-c0) / float64(time.Since(start))
	fmt.Printf("used %.2f cores\n", got)
	if got <= want {
		return fmt.Errorf("held to %.2f cores", got)
	}
	return nil
}

func attackSleep(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	d, err := time.ParseDuration(a[0])
	if err != nil {
		return err
	}
	time.Sleep(d)
	fmt.Println("survived", d)
	return nil
}

func helperIdle(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	n, _ := strconv.Atoi(a[0])
	time.Sleep(time.Duration(n) * time.Second)
	return nil
}

// helperVictim is a process of the same user outside the box: it writes
// "signalled" to FILE when SIGUSR1 arrives, and ends after SECONDS.
func helperVictim(a []string) error {
	if err := need(a, 2); err != nil {
		return err
	}
	n, _ := strconv.Atoi(a[1])
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGUSR1)
	fmt.Println("ready")
	select {
	case <-ch:
		return os.WriteFile(a[0], []byte("signalled\n"), 0o600)
	case <-time.After(time.Duration(n) * time.Second):
		return nil
	}
}

// attackChildMem opens the memory of a child of its own for writing: code
// written there would run as that process (reached when the open works;
// nothing is written).
func attackChildMem([]string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	c, err := os.StartProcess(exe, []string{exe, AttackArg, "idle", "5"}, &os.ProcAttr{Files: []*os.File{nil, nil, nil}})
	if err != nil {
		return err
	}
	defer func() { c.Kill(); c.Wait() }()
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", c.Pid), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	fmt.Printf("opened /proc/%d/mem for writing\n", c.Pid)
	return f.Close()
}

// attackReadSome reads a file of the kernel's that must not be empty:
// read-some PATH.
func attackReadSome(a []string) error {
	if err := need(a, 1); err != nil {
		return err
	}
	b, err := os.ReadFile(a[0])
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return fmt.Errorf("%s reads as empty", a[0])
	}
	fmt.Printf("%s: %d bytes\n", a[0], len(b))
	return nil
}
