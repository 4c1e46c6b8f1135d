package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/airlock-run/airlock/sandbox"
)

// helperArg makes the test binary a stand-in for `airlock run`, so a test
// can kill airlock itself in the middle of a run.
const helperArg = "__airlock-test-runner"

type helperReq struct {
	Spec sandbox.Spec `json:"spec"`
	Tier sandbox.Tier `json:"tier"`
	Argv []string     `json:"argv"`
	// Warm runs `true` and then Argv in one warm box (Pool).
	Warm bool `json:"warm,omitempty"`
}

func helperMain(args []string) int {
	var hr helperReq
	if len(args) != 1 || json.Unmarshal([]byte(args[0]), &hr) != nil {
		fmt.Fprintln(os.Stderr, "helper: bad request")
		return 2
	}
	exe, _ := os.Executable()
	if hr.Warm {
		return warmHelper(exe, hr)
	}
	res, err := Run(context.Background(), exe, Request{Argv: hr.Argv, Spec: hr.Spec, Tier: hr.Tier, Stdout: os.Stdout, Stderr: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 125
	}
	return res.ExitCode
}
