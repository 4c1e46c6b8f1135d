package approval

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
)

func TestAnswer(t *testing.T) {
	for _, c := range []struct {
		name, result string
		want         mediator.Answer
	}{
		{"yes", `{"action":"accept","content":{"allow":true}}`, mediator.AnswerAllowOnce},
		{"no", `{"action":"accept","content":{"allow":false}}`, mediator.AnswerDeny},
		{"declined", `{"action":"decline"}`, mediator.AnswerDeny},
		{"cancelled", `{"action":"cancel"}`, mediator.AnswerDeny},
		{"allow as a string", `{"action":"accept","content":{"allow":"true"}}`, mediator.AnswerDeny},
		{"action in another case", `{"Action":"accept","content":{"allow":true}}`, mediator.AnswerDeny},
		{"two spellings of action", `{"action":"decline","ACTION":"accept","content":{"allow":true}}`, mediator.AnswerError},
		{"two spellings of allow", `{"action":"accept","content":{"allow":false,"Allow":true}}`, mediator.AnswerError},
		{"not an object", `[1]`, mediator.AnswerError},
		{"garbage", `{`, mediator.AnswerError},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Answer(json.RawMessage(c.result)).Answer; got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestQuestionIsMarkedAsAirlocks(t *testing.T) {
	e := mediator.Escalation{Call: mediator.Call{Kind: mediator.KindExec, Argv: []string{"git", "push"}},
		Decision: policy.Decision{Reason: "pushing needs a person's approval."}}
	q := For(e)
	if _, ok := q.Meta[Meta]; !ok {
		t.Errorf("question %+v carries no %s mark", q, Meta)
	}
	for _, want := range []string{"airlock: the agent asks to run the command [\"git\",\"push\"]", "airlock's own", strings.TrimSpace(ServerPrefix)} {
		if !strings.Contains(q.Message, want) {
			t.Errorf("message %q does not say %q", q.Message, want)
		}
	}
}

func TestFailed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if r := Failed(ctx, context.Canceled); r.Answer != mediator.AnswerError {
		t.Errorf("live context: got %v, want an error", r.Answer)
	}
	cancel()
	if r := Failed(ctx, context.Canceled); r.Answer != mediator.AnswerTimeout {
		t.Errorf("ended context: got %v, want a timeout", r.Answer)
	}
}
