// Command airlock-box is the code that runs inside an airlock box, and
// nothing else: the box's init and its exec step (sandbox/boxinit: the
// init, the exec wall, the noexec seal, a warm box's server) and the proxy
// command git and ssh run there (egress/forward's airlock-connect). The
// sandbox starts it, in place of the whole airlock binary, when it lies
// beside that binary and only its owner may change it (sandbox/initbin_linux.go):
// it starts in a fraction of the time, and a box that may run its proxy
// command can run only this, not airlock's other modes. Its dependencies
// are kept small by internal/importrules.
package main

import (
	"os"

	"github.com/airlock-run/airlock/egress/forward"
	"github.com/airlock-run/airlock/sandbox/boxinit"
)

func main() {
	switch {
	case len(os.Args) > 1 && os.Args[1] == boxinit.Arg:
		os.Exit(boxinit.Main(os.Args[2:]))
	case forward.IsConnect(os.Args): // git/ssh ProxyCommand inside the box
		os.Exit(forward.ConnectMain(os.Args))
	}
	os.Stderr.WriteString("airlock-box: this is the code airlock runs inside its boxes; it has no mode to run by hand (run airlock)\n")
	os.Exit(2)
}
