package testsupport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// module is the module path whose go.mod marks the checkout's root.
const module = "github.com/airlock-run/airlock"

// built is the binary AirlockBin built for this test process, once;
// builtNode NodeBin's.
var (
	built     = sync.OnceValues(buildAirlock)
	builtNode = sync.OnceValues(func() (string, error) { return buildWithBox("./cmd/airlock-node", "airlock-node") })
	builtBox  = sync.OnceValues(func() (string, error) { return build("./cmd/airlock-box", BoxBinary, "") })
)

// buildWithBox builds pkg as name and airlock-box beside it, as
// scripts/setup.sh does: the boxes that binary plans run that one inside.
func buildWithBox(pkg, name string) (string, error) {
	bin, err := build(pkg, name, "")
	if err == nil {
		_, err = build("./cmd/airlock-box", BoxBinary, filepath.Dir(bin))
	}
	return bin, err
}

// buildAirlock builds the airlock binary with airlock-box and airlock-mcp
// beside it, as scripts/setup.sh does: `airlock mcp` runs the airlock-mcp
// beside it.
func buildAirlock() (string, error) {
	bin, err := buildWithBox("./cmd/airlock", "airlock")
	if err == nil {
		_, err = build("./cmd/airlock-mcp", "airlock-mcp", filepath.Dir(bin))
	}
	return bin, err
}

// BoxBinary is the in-box binary's name (sandbox.BoxBinary; this package
// imports no airlock package).
const BoxBinary = "airlock-box"

// AirlockBin returns the airlock binary the test runs: $AIRLOCK_BIN when set
// (scripts/test.sh builds it once for every package, with airlock-box and
// airlock-mcp beside it), else one built from this checkout's cmd/airlock,
// once per test binary, with cmd/airlock-box (the boxes it plans run that
// one inside) and cmd/airlock-mcp (`airlock mcp` runs that one) built
// beside it. A build that fails fails the test: a test that needs
// the binary proves nothing without it.
func AirlockBin(t testing.TB) string {
	t.Helper()
	if b := binFromEnv(t, "AIRLOCK_BIN", "airlock"); b != "" {
		return b
	}
	bin, err := built()
	if err != nil {
		t.Fatalf("build airlock: %v", err)
	}
	return bin
}

// NodeBin returns the airlock-node binary (the node, which links the
// Temporal SDK) the test runs: $AIRLOCK_NODE_BIN when set, else the
// airlock-node beside AirlockBin's binary (scripts/setup.sh builds both),
// else one built from this checkout's cmd/airlock-node, once per test
// binary, with airlock-box beside it.
func NodeBin(t testing.TB) string {
	t.Helper()
	if b := binFromEnv(t, "AIRLOCK_NODE_BIN", "airlock-node"); b != "" {
		return b
	}
	beside := filepath.Join(filepath.Dir(AirlockBin(t)), "airlock-node")
	if st, err := os.Stat(beside); err == nil && !st.IsDir() {
		return beside
	}
	bin, err := builtNode()
	if err != nil {
		t.Fatalf("build airlock-node: %v", err)
	}
	return bin
}

// BoxBin returns an airlock-box binary (cmd/airlock-box, built without
// cgo as scripts/setup.sh builds it): the one beside AirlockBin's binary,
// else one built from this checkout into a directory of its own, once per
// test binary.
func BoxBin(t testing.TB) string {
	t.Helper()
	beside := filepath.Join(filepath.Dir(AirlockBin(t)), BoxBinary)
	if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() {
		return beside
	}
	bin, err := builtBox()
	if err != nil {
		t.Fatalf("build %s: %v", BoxBinary, err)
	}
	return bin
}

// binFromEnv is the binary $key names, "" when it is unset; one that is not
// a file fails the test, naming how to build name.
func binFromEnv(t testing.TB, key, name string) string {
	t.Helper()
	b := os.Getenv(key)
	if b == "" {
		return ""
	}
	if st, err := os.Stat(b); err != nil || st.IsDir() {
		t.Fatalf("%s=%s is not the %s binary (build it with go build -o bin/%s ./cmd/%s): %v", key, b, name, name, name, err)
	}
	return b
}

// build compiles pkg (./cmd/airlock, ./cmd/airlock-node, ./cmd/airlock-box)
// as name into dir, "" for a fresh temporary directory. airlock-box,
// airlock and airlock-mcp are built without cgo, as scripts/setup.sh builds
// them: a static binary starts faster than one the dynamic loader must link
// first.
func build(pkg, name, dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "airlock-test-bin-"); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if name == BoxBinary || name == "airlock" || name == "airlock-mcp" {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %v\n%s", pkg, root, err, out)
	}
	return bin, nil
}

// moduleRoot walks up from the working directory (a test runs in its
// package's directory) to the go.mod of airlock's module.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod of " + module + " above the working directory")
		}
		dir = up
	}
}

// isModule reports whether the go.mod at path declares airlock's module.
func isModule(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`) == module
		}
	}
	return false
}

// CopyBin copies the binary src to dst (which must not exist) with mode,
// past the umask: for tests that put a binary where what lies beside it
// is theirs to choose.
func CopyBin(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dst, mode); err != nil {
		t.Fatal(err)
	}
}
