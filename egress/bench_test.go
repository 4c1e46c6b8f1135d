package egress_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/egress"
	"github.com/airlock-run/airlock/egress/wire"
)

// sink is a loopback server that, per connection, either sends size bytes
// and closes (size > 0) or echoes (size == 0).
func sink(tb testing.TB, size int64) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	buf := make([]byte, 1<<20)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if size == 0 {
					io.Copy(c, c)
					return
				}
				for left := size; left > 0; left -= int64(len(buf)) {
					if _, err := c.Write(buf[:min(int64(len(buf)), left)]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln
}

// tunnel opens a CONNECT tunnel to target through the forwarder at fwd.
func tunnel(fwd, target string) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", fwd)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReaderSize(c, 256<<10)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if resp.StatusCode != 200 {
		c.Close()
		return nil, nil, fmt.Errorf("CONNECT %s: %s", target, resp.Status)
	}
	return c, br, nil
}

func benchStack(b testing.TB, port int) *stack {
	o := policyOpts(b, []string{"127.0.0.1:" + strconv.Itoa(port)}, nil)
	// Count the destination as public, so each decision also runs the
	// check against this host's own addresses: the slowest path.
	return newStack(b, egress.WithGlobal(o, func(netip.Addr) bool { return true }))
}

// BenchmarkTransfer256MiB moves 256 MiB from a loopback server to the
// client directly, through a bare one-hop relay, and through forwarder and
// proxy, in the same run, and reports the proxied throughput as a ratio of
// the direct one (and the bare relay's, as the host's ceiling for any relay:
// on two cores shared by client, server and relay it is far below 1). Each
// round runs the three in a different order, so none always meets another's
// leftovers; the medians of the rounds' ratios resist bursts of load from
// other processes. proxied/bare-relay is what the proxy costs beyond the hop
// itself (1 = nothing): forwarder and proxy relay the box client's own
// socket with splice(2), one hop like the bare relay's io.Copy.
func BenchmarkTransfer256MiB(b *testing.B) {
	const size = 256 << 20
	ln := sink(b, size)
	s := benchStack(b, ln.Addr().(*net.TCPAddr).Port)
	buf := make([]byte, 256<<10)
	drain := func(r io.Reader) {
		var n int64
		for {
			m, err := r.Read(buf)
			n += int64(m)
			if err != nil {
				break
			}
		}
		if n != size {
			b.Fatalf("got %d bytes, want %d", n, size)
		}
	}
	relay := bareRelay(b, ln.Addr().String())
	dial := func(addr string) func() time.Duration {
		return func() time.Duration {
			t0 := time.Now()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			drain(c)
			c.Close()
			return time.Since(t0)
		}
	}
	ways := [3]func() time.Duration{dial(ln.Addr().String()), dial(relay), func() time.Duration {
		t0 := time.Now()
		pc, br, err := tunnel(s.httpAddr, ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		drain(br)
		pc.Close()
		return time.Since(t0)
	}}
	var total [3]time.Duration // direct, relayed, proxied
	var ratio, relayRatio, overRelay []float64
	b.SetBytes(3 * size)
	round := 0
	for b.Loop() {
		var d [3]time.Duration
		for k := range ways {
			w := (k + round) % 3
			d[w] = ways[w]()
			total[w] += d[w]
		}
		round++
		ratio = append(ratio, d[0].Seconds()/d[2].Seconds())
		relayRatio = append(relayRatio, d[0].Seconds()/d[1].Seconds())
		overRelay = append(overRelay, d[1].Seconds()/d[2].Seconds())
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / (1 << 20) }
	b.ReportMetric(mbps(total[0]), "direct-MiB/s")
	b.ReportMetric(mbps(total[2]), "proxied-MiB/s")
	b.ReportMetric(total[0].Seconds()/total[2].Seconds(), "ratio")
	b.ReportMetric(medianOf(ratio), "ratio-median")
	// The ceiling any user-space relay has on this host: one io.Copy hop.
	b.ReportMetric(total[0].Seconds()/total[1].Seconds(), "bare-relay-ratio")
	b.ReportMetric(medianOf(relayRatio), "bare-relay-ratio-median")
	b.ReportMetric(medianOf(overRelay), "proxied/bare-relay-median")
}

// medianOf is the median of xs (which it sorts).
func medianOf(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// bareRelay is the least a proxy could do: accept, dial target, io.Copy
// both ways, nothing decided. It is the reference for what one relay hop
// costs on the machine running the benchmark.
func bareRelay(tb testing.TB, target string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go io.Copy(up, c)
				io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String()
}

// BenchmarkConnectSetup measures, in the same run, the time to a first
// echoed byte over a direct connection, over a new tunnel through forwarder
// and proxy (the way of a box whose init runs the forwarder), and through a
// listener the proxy accepts on itself (Proxy.ServeBox: a tier-1 box's
// handed-out listener, one hop fewer), setupRounds times each per
// iteration, alternating, and reports the median added times.
func BenchmarkConnectSetup(b *testing.B) {
	ln := sink(b, 0)
	s := benchStack(b, ln.Addr().(*net.TCPAddr).Port)
	target := ln.Addr().String()
	boxLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.proxy.ServeBox(boxLn, wire.ModeHTTP)
	b.Cleanup(func() { boxLn.Close() })
	one := []byte{'x'}
	roundTrip := func(c net.Conn, r io.Reader) {
		if _, err := c.Write(one); err != nil {
			b.Fatal(err)
		}
		var got [1]byte
		if _, err := io.ReadFull(r, got[:]); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
	var direct, proxied, served []time.Duration
	for b.Loop() {
		for range setupRounds {
			t0 := time.Now()
			c, err := net.Dial("tcp", target)
			if err != nil {
				b.Fatal(err)
			}
			roundTrip(c, c)
			t1 := time.Now()
			pc, br, err := tunnel(s.httpAddr, target)
			if err != nil {
				b.Fatal(err)
			}
			roundTrip(pc, br)
			t2 := time.Now()
			sc, sbr, err := tunnel(boxLn.Addr().String(), target)
			if err != nil {
				b.Fatal(err)
			}
			roundTrip(sc, sbr)
			direct = append(direct, t1.Sub(t0))
			proxied = append(proxied, t2.Sub(t1))
			served = append(served, time.Since(t2))
		}
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	md, mp, ms := median(direct), median(proxied), median(served)
	b.ReportMetric(float64(md.Microseconds()), "direct-µs")
	b.ReportMetric(float64(mp.Microseconds()), "proxied-µs")
	b.ReportMetric(float64((mp - md).Microseconds()), "added-µs")
	b.ReportMetric(float64(ms.Microseconds()), "served-µs")
	b.ReportMetric(float64((ms - md).Microseconds()), "served-added-µs")
}

// setupRounds is how many tunnels each iteration of BenchmarkConnectSetup
// opens, so even a run of three iterations has a median worth the name.
const setupRounds = 50

// TestThousandTunnels holds 1,000 tunnels open at once through forwarder and
// proxy, checks each still carries data, and that closing them leaves no
// goroutine or descriptor behind.
func TestThousandTunnels(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 6,000 descriptors; skipped in -short")
	}
	leakCheck(t)
	const n = 1000
	ln := sink(t, 0)
	s := newStack(t, policyOpts(t, []string{"127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)}, nil))
	type tun struct {
		c  net.Conn
		br *bufio.Reader
	}
	tuns := make([]tun, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range tuns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, br, err := tunnel(s.httpAddr, ln.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			tuns[i] = tun{c, br}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("opening 1,000 tunnels: %v", err)
	}
	defer func() {
		for _, tu := range tuns {
			tu.c.Close()
		}
	}()
	for i, tu := range tuns {
		msg := []byte(strconv.Itoa(i) + "\n")
		tu.c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := tu.c.Write(msg); err != nil {
			t.Fatalf("tunnel %d: %v", i, err)
		}
	}
	for i, tu := range tuns {
		line, err := tu.br.ReadString('\n')
		if err != nil || line != strconv.Itoa(i)+"\n" {
			t.Fatalf("tunnel %d: got %q %v, want its own echo", i, line, err)
		}
	}
	if got := len(s.audited()); got != 0 {
		t.Fatalf("%d tunnels audited as ended while all are open", got)
	}
}
