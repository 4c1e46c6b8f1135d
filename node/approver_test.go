package node

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/mediator"
)

// TestServerApprover: the node's approver raises the kernel's escalation
// on the server under the escalation's digest and returns the answer the
// workflow delivers; an answer for another digest is never taken, and
// nobody answering is a timeout.
func TestServerApprover(t *testing.T) {
	e := mediator.Escalation{Call: mediator.Call{Kind: mediator.KindNet, Host: "api.example.com", Port: 443}, Timeout: time.Second}
	tests := []struct {
		name    string
		deliver func(q jobs.Question) jobs.Answer
		want    mediator.Answer
		decider string
	}{
		{"an allow delivered for the question", func(q jobs.Question) jobs.Answer {
			return jobs.Answer{Question: q.ID, Digest: q.Digest, Answer: jobs.AnswerAllowOnce, By: "person:ann"}
		}, mediator.AnswerAllowOnce, "person:ann"},
		{"a deny delivered for the question", func(q jobs.Question) jobs.Answer {
			return jobs.Answer{Question: q.ID, Digest: q.Digest, Answer: jobs.AnswerDeny, By: "person:operator"}
		}, mediator.AnswerDeny, "person:operator"},
		{"an allow for another digest is refused, the call times out", func(q jobs.Question) jobs.Answer {
			return jobs.Answer{Question: q.ID, Digest: "sha256:other", Answer: jobs.AnswerAllowOnce}
		}, mediator.AnswerTimeout, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &jobs.Waiters{}
			raised := make(chan jobs.Question, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				var q jobs.Question
				if r.URL.Path != "/v1/jobs/j-1/questions" || r.Header.Get("Authorization") != "Bearer node.n1.t" || json.NewDecoder(r.Body).Decode(&q) != nil {
					rw.WriteHeader(400)
					return
				}
				rw.WriteHeader(202)
				raised <- q
			}))
			defer srv.Close()
			a := &serverApprover{cfg: Config{Server: srv.URL, ID: "n1"}, token: func() string { return "node.n1.t" }, job: "j-1", waiters: w}
			go func() {
				q := <-raised
				if q.Digest != e.Digest() || q.Node != "n1" || q.Call != "connect api.example.com:443" {
					t.Errorf("question %+v, want the escalation's digest and call", q)
				}
				_ = w.Deliver(tt.deliver(q))
			}()
			ctx, cancel := context.WithTimeout(context.Background(), e.Timeout)
			defer cancel()
			r := a.Ask(ctx, e)
			if r.Answer != tt.want || r.Decider != tt.decider {
				t.Fatalf("reply %+v, want %s by %s", r, tt.want, tt.decider)
			}
		})
	}
}
