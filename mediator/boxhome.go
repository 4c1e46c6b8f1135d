package mediator

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/policy"
	"github.com/airlock-run/airlock/sandbox"
)

// keptHome returns the directory kept as the box's HOME for the working
// directory of w (`sandbox.home: persist`), making it when missing:
// $XDG_STATE_HOME/airlock/homes/ID, else ~/.local/state/airlock/homes/ID,
// where ID names the resolved working directory. It is airlock's state,
// mode 0700; the planner refuses it when it lies inside a writable grant.
func keptHome(w policy.World) (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(base) {
		if !filepath.IsAbs(w.Home) {
			return "", errs.Unavailablef("sandbox.home: persist needs a place for the home: neither XDG_STATE_HOME nor HOME is an absolute path")
		}
		base = filepath.Join(w.Home, ".local", "state")
	}
	wd := w.Workdir
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	sum := sha256.Sum256([]byte(wd))
	dir := filepath.Join(base, "airlock", "homes", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", errs.Wrap(errs.Unavailable, err, "sandbox.home: make the kept home")
	}
	return dir, nil
}

// cacheEnv returns the variables naming the granted caches
// (sandbox.ToolCaches). A cache counts
// as granted when an fs.read entry names it exactly (a read-only cache,
// as asked), or when it lies inside a write grant that is writable in
// this mode. A read grant of a wider tree (`~`) sets nothing: a tool
// pointed at a read-only cache it did not ask for fails where its own
// empty one works.
func cacheEnv(p *policy.Policy, w policy.World) map[string]string {
	out := map[string]string{}
	if !filepath.IsAbs(w.Home) {
		return out
	}
	reads, _ := expandPaths(p.FS.Read, w, "fs.read")
	var writes []string
	if w.Mode == policy.Fix {
		writes, _ = expandPaths(p.FS.Write, w, "fs.write")
	}
	for _, c := range sandbox.ToolCaches {
		path := filepath.Join(w.Home, c.Rel)
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			continue
		}
		granted := false
		for _, r := range reads {
			granted = granted || r == path
		}
		for _, wr := range writes {
			granted = granted || path == wr || len(path) > len(wr) && path[:len(wr)+1] == wr+"/"
		}
		if granted {
			// The box sees a grant at its resolved place.
			if real, err := filepath.EvalSymlinks(path); err == nil {
				path = real
			}
			out[c.Env] = path
		}
	}
	return out
}
