package sandbox

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"io"
	"os"
	"regexp"
	"sync"
)

// The version patterns are compiled on first use, by the probe only.
var (
	pseudoDateRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^v0\.0\.0-(20[0-9]{6})[0-9]{6}-[0-9a-f]+$`)
	})
	releaseRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`release-(20[0-9]{6})\.[0-9]+`) })
)

// probeRunsc finds runsc (PATH, then the system directories) and checks
// what can be checked without running it: a regular executable, static,
// and no older than gvisorFloor, under the kernel's caches c.
func probeRunsc(pathEnv string, c *Caches) RunscReport {
	r := RunscReport{Path: probeGVisor(pathEnv, c), Platform: gvisorPlatform}
	if r.Path == "" {
		r.Why, r.Fix = runscMissing, gvisorInstall
		return r
	}
	return cachedRunsc(c, r) // checkRunsc, once per file (probecache_linux.go)
}

func checkRunsc(r RunscReport) RunscReport {
	f, err := elf.Open(r.Path)
	if err != nil {
		r.Why, r.Fix = "runsc at "+r.Path+" is not a readable ELF binary: "+err.Error(), gvisorInstall
		return r
	}
	r.Static = true
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			r.Static = false
		}
	}
	f.Close()
	r.Version, r.Date = runscVersion(r.Path)
	return judgeRunsc(r)
}

// runscVersion reads the version runsc was built from: the Go module
// version of a `go install` build (a pseudo-version carrying the commit's
// date), else a release-YYYYMMDD.N string in the binary.
func runscVersion(path string) (version, date string) {
	if bi, err := buildinfo.ReadFile(path); err == nil {
		v := bi.Main.Version
		if bi.Main.Path != "gvisor.dev/gvisor" {
			for _, d := range bi.Deps {
				if d.Path == "gvisor.dev/gvisor" {
					v = d.Version
				}
			}
		}
		if m := pseudoDateRE().FindStringSubmatch(v); m != nil {
			return v, m[1]
		}
		if v != "" && v != "(devel)" {
			version = v
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return version, ""
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 256<<20))
	if err != nil {
		return version, ""
	}
	if i := bytes.Index(data, []byte("release-20")); i >= 0 {
		end := min(i+40, len(data))
		if m := releaseRE().FindSubmatch(data[i:end]); m != nil {
			return string(m[0]), string(m[1])
		}
	}
	return version, ""
}
