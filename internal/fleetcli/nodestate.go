package fleetcli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/policy"
)

// A job's policy is the job's own, and may name any path: relative to its
// working directory (STATE/jobs/ID/work on the node), under its home (the
// job's directory) or absolute. The node's state directory holds what a
// job must never reach: the node's API token and its key (a job that read
// them could act as the node), the other jobs' directories and the node's
// file store (their results, without their taint). So the node refuses a
// job whose policy's read or write rules reach into that directory, or
// cover it, anywhere but the job's own directory; the sandbox then binds
// none of it into the job's boxes, and the kernel allows no file call in it.

// checkNodeState refuses p when a rule of its fs.read or fs.write may
// reach a protected directory (the node's state, airlock's own state on
// this host, where a server's tokens and keys live beside it) outside
// jobDir (STATE/jobs/ID): the rule's fixed part (the segments before its
// first glob), lexically and with symlinks resolved, must neither lie in
// one outside jobDir nor hold one. A protected directory the system's
// read-only part covers (every box reads it) is refused too.
func checkNodeState(p *policy.Policy, jobDir string, protected ...string) error {
	var forms []string
	for _, dir := range protected {
		if dir == "" {
			continue
		}
		for _, s := range pathSpellings(filepath.Clean(dir)) {
			if policy.SystemRead(s) {
				return errs.Invalidf("node: airlock's state directory %s lies in the system every box reads; start the node with --state (and $XDG_STATE_HOME) outside /usr, /etc, /bin, /sbin and /lib", dir)
			}
			forms = append(forms, s)
		}
	}
	home, work := jobDir, filepath.Join(jobDir, "work")
	own := pathSpellings(jobDir)
	rules := map[string][]string{"fs.read": p.FS.Read, "fs.write": p.FS.Write}
	for _, name := range []string{"fs.read", "fs.write"} {
		for i, e := range rules[name] {
			for _, f := range pathSpellings(fixedPart(e, work, home)) {
				for _, s := range forms {
					if reaches(f, s, own) {
						return errs.Invalidf("%s[%d] %q reaches the node's state directory or airlock's own state (tokens and keys, the other jobs' files); a job reads and writes only below its own working directory there: name paths outside them, or none above the working directory", name, i, e)
					}
				}
			}
		}
	}
	return nil
}

// fixedPart is entry e made absolute (relative to work, "~" to home) and
// cut before its first segment holding a glob.
func fixedPart(e, work, home string) string {
	switch {
	case e == "~" || strings.HasPrefix(e, "~/"):
		e = home + e[1:]
	case !strings.HasPrefix(e, "/"):
		e = work + "/" + e
	}
	var kept []string
	for _, seg := range strings.Split(e, "/") {
		if strings.ContainsAny(seg, "*?[") {
			break
		}
		kept = append(kept, seg)
	}
	return filepath.Clean("/" + strings.Join(kept, "/"))
}

// reaches says whether a rule whose fixed part is f may cover a path of
// state outside the job's own directory (any spelling in own).
func reaches(f, state string, own []string) bool {
	if underDir(state, f) {
		return true // the rule holds the whole state directory
	}
	if !underDir(f, state) {
		return false
	}
	for _, o := range own {
		if underDir(f, o) {
			return false
		}
	}
	return true
}

// underDir says whether p is dir or lies below it.
func underDir(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// pathSpellings are p and p with its longest existing prefix's symlinks
// resolved.
func pathSpellings(p string) []string {
	out := []string{p}
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			if res := filepath.Join(r, rest); res != p {
				out = append(out, res)
			}
			return out
		}
		if dir == "/" || dir == "." {
			return out
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// statePaths are the node's state directory and its job directory for
// dir, the directory the node made for a job (STATE/jobs/ID).
func statePaths(dir string) (state string, ok bool) {
	parent := filepath.Dir(dir)
	if filepath.Base(parent) != "jobs" {
		return "", false
	}
	_, err := os.Stat(parent)
	return filepath.Dir(parent), err == nil
}
