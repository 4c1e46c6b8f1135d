package server

import (
	"context"
	"errors"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/authorization"
	"google.golang.org/grpc"

	"github.com/airlock-run/airlock/jobs"
	"github.com/airlock-run/airlock/jobs/pki"
)

// asNode is a frontend call's context as the claim mapper leaves it for
// node's verified certificate.
func asNode(node string) context.Context {
	id := pki.Identity{Role: pki.RoleNode, Node: node, Pool: "ci"}
	return context.WithValue(context.Background(), authorization.MappedClaims,
		&authorization.Claims{Subject: id.String(), Extensions: id, AuthType: "mtls"})
}

// polled is what the frontend hands a poll: a task of activity for the
// workflow wf.
func polled(token, activity, wf string) grpc.UnaryHandler {
	return func(context.Context, any) (any, error) {
		return &workflowservice.PollActivityTaskQueueResponse{TaskToken: []byte(token),
			ActivityType:      &commonpb.ActivityType{Name: activity},
			WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: wf, RunId: wf + "-run"}}, nil
	}
}

// answered is the frontend taking an answer.
func answered(context.Context, any) (any, error) {
	return &workflowservice.RespondActivityTaskCompletedResponse{}, nil
}

func complete(token, result string) *workflowservice.RespondActivityTaskCompletedRequest {
	return &workflowservice.RespondActivityTaskCompletedRequest{TaskToken: []byte(token), Result: payload(result)}
}

// After a server restart a node is not in the registry until it registers
// again; a run it claimed before goes on and answers meanwhile. That
// answer must still be held to the tier its claim was allowed at, or the
// node records any tier it likes in the job (here 2 on a claim at tier 1).
// A run the server saw no claim for is refused until the node registers.
func TestAttackRunAnswerAfterRestart(t *testing.T) {
	file := t.TempDir() + "/task-bindings.json"
	registered := func(string) (int, bool, bool) { return 1, false, true }
	notYet := func(string) (int, bool, bool) { return 0, false, false }
	eligible := func(node, queue string) bool { return queue == jobs.FloorQueue("ci") }
	before, err := keptTokens(file, eligible, registered)
	if err != nil {
		t.Fatal(err)
	}
	ctx := asNode("n1")
	// The claim, at the node's attested tier 1, and the run's poll.
	if _, err := before.intercept(ctx, &workflowservice.PollActivityTaskQueueRequest{}, nil, polled("claim-1", jobs.ClaimActivity, "j-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := before.intercept(ctx, complete("claim-1", `{"node":"n1","tier":1}`), nil, answered); err != nil {
		t.Fatalf("the claim at the attested tier: %v", err)
	}
	if _, err := before.intercept(ctx, &workflowservice.PollActivityTaskQueueRequest{}, nil, polled("run-1", jobs.RunActivity, "j-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := before.intercept(ctx, &workflowservice.PollActivityTaskQueueRequest{}, nil, polled("call-1", jobs.CallActivity, "j-1")); err != nil {
		t.Fatal(err)
	}
	// A run polled with no claim the server saw (its binding file lost
	// the claim, or the claim went to another workflow).
	if _, err := before.intercept(ctx, &workflowservice.PollActivityTaskQueueRequest{}, nil, polled("run-2", jobs.RunActivity, "j-2")); err != nil {
		t.Fatal(err)
	}
	after, err := keptTokens(file, eligible, notYet)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token, result string
		want                string // "" allowed, else the error's kind
	}{
		{"a run above its claim's tier", "run-1", `{"node":"n1","tier":2,"exit_code":0}`, "denied"},
		{"a run with no claim seen, before the node registered", "run-2", `{"node":"n1","tier":1,"exit_code":0}`, "unavailable"},
		{"a run at its claim's tier", "run-1", `{"node":"n1","tier":1,"exit_code":0}`, ""},
		{"a call of the job above its claim's tier", "call-1", `{"call":"c-1","node":"n1","tier":2,"exit_code":0}`, "denied"},
		{"a call of the job at its claim's tier", "call-1", `{"call":"c-1","node":"n1","tier":1,"exit_code":0}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := after.intercept(ctx, complete(tc.token, tc.result), nil, answered)
			var denied *serviceerror.PermissionDenied
			var unavailable *serviceerror.Unavailable
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == "denied" && !errors.As(err, &denied):
				t.Fatalf("got %v, want it refused as permission denied", err)
			case tc.want == "unavailable" && !errors.As(err, &unavailable):
				t.Fatalf("got %v, want it refused until the node registers (unavailable, so the node tries again)", err)
			}
		})
	}
}
