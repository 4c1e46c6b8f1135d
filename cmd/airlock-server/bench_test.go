package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-run/airlock/api"
)

// startAPI starts a job through the API and returns its id.
func (f *fleet) startAPI(b testing.TB, body string) string {
	b.Helper()
	var st api.Started
	if code := f.post("/v1/jobs", body, &st); code != http.StatusCreated {
		b.Fatalf("POST /v1/jobs %s: %d", body, code)
	}
	return st.ID
}

// waitAPI waits for job id to end through the API.
func (f *fleet) waitAPI(id string) api.JobView {
	var v api.JobView
	f.get("/v1/jobs/"+id+"?wait=1", &v)
	return v
}

// BenchmarkJobFirstByte is a job's start to its first output byte back
// at the caller, through the embedded server and a tier-1 node. A job's
// output comes back with its result (the workflow's), not streamed, so
// this is start → result: claim, run in a box, result through Temporal.
func BenchmarkJobFirstByte(b *testing.B) {
	requireTier1(b)
	f := startFleet(b, time.Minute)
	f.node("fb1", "1")
	for b.Loop() {
		v := f.waitAPI(f.startAPI(b, `{"pool":"ci","argv":["echo","first"]}`))
		if v.Result == nil || !strings.HasPrefix(v.Result.Stdout, "f") {
			b.Fatalf("job: %+v", v)
		}
	}
}

// BenchmarkHundredJobs is 100 short floor jobs started at once over three
// tier-1 nodes: throughput, and each job's start → result latency. Beside
// it, in the same run and on the same Temporal server, the server's own
// rate for 100 workflows started at once that do nothing (empty-wf/s)
// and that run two empty activities in sequence (2act-wf/s, a short
// job's claim and lease): jobs/s over them (ratio-empty, ratio-2act)
// says how much of a job's time is Temporal's, not airlock's.
func BenchmarkHundredJobs(b *testing.B) {
	requireTier1(b)
	f := startFleet(b, 5*time.Minute)
	for _, n := range []string{"h1", "h2", "h3"} {
		f.node(n, "1")
	}
	tc, err := jobsClient(f)
	if err != nil {
		b.Fatal(err)
	}
	defer tc.Close()
	const jobs = 100
	var lat []time.Duration
	var elapsed, empty, twoSteps time.Duration
	perNode := map[string]int{}
	baseline := func(steps int) time.Duration {
		d, err := tc.Baseline(f.ctx, jobs, steps)
		if err != nil {
			b.Fatalf("baseline of %d steps: %v", steps, err)
		}
		return d
	}
	iters := 0
	for b.Loop() {
		iters++
		empty += baseline(0)
		twoSteps += baseline(2)
		start := time.Now()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range jobs {
			wg.Go(func() {
				t0 := time.Now()
				v := f.waitAPI(f.startAPI(b, fmt.Sprintf(`{"pool":"ci","argv":["echo","job-%d"]}`, i)))
				d := time.Since(t0)
				if v.Result == nil || v.Result.Stdout != fmt.Sprintf("job-%d\n", i) {
					b.Errorf("job %d: %+v", i, v)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				perNode[v.Result.Node]++
				mu.Unlock()
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
	}
	if len(lat) == 0 {
		b.Fatal("no job completed")
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Milliseconds()) }
	rate := float64(len(lat)) / elapsed.Seconds()
	emptyRate, twoRate := float64(iters*jobs)/empty.Seconds(), float64(iters*jobs)/twoSteps.Seconds()
	b.ReportMetric(rate, "jobs/s")
	b.ReportMetric(emptyRate, "empty-wf/s")
	b.ReportMetric(twoRate, "2act-wf/s")
	b.ReportMetric(rate/emptyRate, "ratio-empty")
	b.ReportMetric(rate/twoRate, "ratio-2act")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.Logf("jobs per node: %v", perNode)
}

// BenchmarkKillSwitch is the kill switch's latency: from the kill (POST
// /v1/jobs/ID/kill, what `airlock job kill` sends) to the box's last
// process gone from the host's process table, for a job running a sleep
// on a tier-1 node. Only the kill is timed; the start is not.
func BenchmarkKillSwitch(b *testing.B) {
	requireTier1(b)
	f := startFleet(b, time.Minute)
	f.node("k1", "1")
	var total time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		// A length of its own, so the process table shows this job's.
		arg := fmt.Sprintf("600.%06d", n)
		id := f.startAPI(b, `{"pool":"ci","argv":["sleep","`+arg+`"]}`)
		waitFor(b, "the job's sleep to run", func() bool { return sleeping(arg) })
		b.StartTimer()
		start := time.Now()
		var out map[string]string
		if code := f.post("/v1/jobs/"+id+"/kill", "", &out); code != http.StatusAccepted {
			b.Fatalf("kill: %d %v", code, out)
		}
		for sleeping(arg) {
			time.Sleep(2 * time.Millisecond)
		}
		total += time.Since(start)
		n++
		b.StopTimer()
		if v := f.waitAPI(id); v.State != "canceled" {
			b.Fatalf("killed job: %s, want canceled", v.State)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(n), "ns-kill-to-gone")
}
