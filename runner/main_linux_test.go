package runner

import (
	"os"
	"testing"

	"github.com/airlock-run/airlock/sandbox"
	"github.com/airlock-run/airlock/sandbox/boxinit"
)

// TestMain lets the test binary be the box's init, exactly as bubblewrap
// re-executes the airlock binary with boxinit.Arg, and an attack tool (see
// attackMain) and a runner of its own (see helperMain) for tests that kill
// airlock.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case boxinit.Arg:
			if len(os.Args) > 2 && os.Args[2] == sandbox.GuardArg {
				os.Exit(sandbox.Guard(os.Stdin)) // as cmd/airlock dispatches it
			}
			os.Exit(boxinit.Main(os.Args[2:]))
		case attackArg:
			os.Exit(attackMain(os.Args[2:]))
		case helperArg:
			os.Exit(helperMain(os.Args[2:]))
		}
	}
	// The boxes get their /etc as a run through the CLI does: one view,
	// kept in a directory no box of these tests may write (testCaches,
	// which the specs of runIn, baseSpec and fixSpec carry).
	views, err := os.MkdirTemp("", "airlock-runner-etc-")
	if err != nil {
		panic(err)
	}
	testCaches = sandbox.NewCaches(sandbox.CacheConfig{EtcViewDir: views})
	code := m.Run()
	sandbox.RemoveEtcCache(views)
	os.Exit(code)
}

// testCaches are the host caches of the tests' boxes, as a kernel's.
var testCaches *sandbox.Caches

// testSpec is spec as these tests run it: with testCaches, and the in-box
// code bound at sandbox.InitPath even in boxes with nothing of airlock's
// running inside, since the attack tool is the test binary found there.
func testSpec(spec sandbox.Spec) sandbox.Spec {
	if spec.Caches == nil {
		spec.Caches = testCaches
	}
	spec.BindInBox = true
	return spec
}

func testExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
