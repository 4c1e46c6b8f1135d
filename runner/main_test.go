package runner

import (
	"os"
	"testing"

	"github.com/airlock-run/airlock/sandbox/boxinit"
)

// TestMain lets the test binary be the box's init: bubblewrap re-executes
// it with boxinit.Arg, exactly as it re-executes the airlock binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == boxinit.Arg {
		os.Exit(boxinit.Main(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func testExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
