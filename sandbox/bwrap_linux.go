package sandbox

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// bwrapInfo is what airlock knows of the host's bubblewrap without running
// it: the options and the version compiled into the binary. Reading the
// binary rather than running `bwrap --help` keeps this package free of
// process starts and costs well under a millisecond. --ro-bind-fd came in
// upstream 0.10.0 and is backported by Debian 12; --disable-userns in
// 0.8.0; --clearenv in 0.5.0.
type bwrapInfo = BwrapReport

// bwrapVersionRE is compiled on first use: the probe's result is cached
// between runs, so most starts never read a version.
var bwrapVersionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`bubblewrap ([0-9]+\.[0-9]+\.[0-9]+)`) })

// findBwrap finds the host's bubblewrap: in the PATH's directories only
// root could have written (hostProgram), then the usual system locations;
// a root-owned executable file no one else may write. caches is the
// kernel's: its list says where bubblewrap is never taken from, and it
// keeps what was read.
func findBwrap(pathEnv string, caches *Caches) bwrapInfo {
	c, st := hostProgram(pathEnv, "bwrap", caches, func(c string, st os.FileInfo) bool {
		return st.Mode().IsRegular() && st.Mode()&0o111 != 0 && rootsFile(c, st)
	}, "/usr/bin", "/usr/local/bin", "/bin")
	if c == "" {
		return bwrapInfo{Err: "bwrap not found on PATH nor in /usr/bin, /usr/local/bin, /bin"}
	}
	// Read once per file (probecache_linux.go): the probe and the plan of
	// every run ask.
	return cachedBwrap(caches, c, st, func() bwrapInfo { return readBwrap(c, st) })
}

// readBwrap reads what the bubblewrap at c (st) was built with.
func readBwrap(c string, st os.FileInfo) bwrapInfo {
	info := bwrapInfo{Path: c, Setuid: st.Mode()&os.ModeSetuid != 0}
	data, err := os.ReadFile(c)
	if err != nil {
		info.Err = err.Error()
		return info
	}
	if m := bwrapVersionRE().FindSubmatch(data); m != nil {
		info.Version = string(m[1])
	}
	info.BindFD = bytes.Contains(data, []byte("--ro-bind-fd"))
	info.DisableUserns = bytes.Contains(data, []byte("--disable-userns"))
	info.ClearEnv = bytes.Contains(data, []byte("--clearenv"))
	return info
}

// versionLess reports whether dotted version a is older than b. An unknown
// version counts as older, so a finding errs on the safe side.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pb); i++ {
		if i >= len(pa) {
			return true
		}
		x, err1 := strconv.Atoi(pa[i])
		y, err2 := strconv.Atoi(pb[i])
		if err1 != nil || err2 != nil {
			return true
		}
		if x != y {
			return x < y
		}
	}
	return false
}
