package wiring

// Policy files are trusted by content, not only by place. A box in fix
// mode writes its granted directories, and the next run reads its policy
// from a file: a box that could write that file (or rename its directory
// aside and put another there) would choose the confinement of the next
// run. So:
//
//   - A policy whose SHA-256 is in the person's trusted list (`airlock
//     policy trust FILE`, $XDG_CONFIG_HOME/airlock/trusted.yaml) is the
//     person's.
//   - Otherwise it is held against the trusted one: the content last
//     trusted at its path when there is one; else, when a box could have
//     written the file — it lies inside a path the policy itself lets a
//     box write, or inside one an earlier run of this user granted a box
//     (recorded in $XDG_STATE_HOME/airlock/box-writable, see
//     recordBoxWritable) — the built-in workspace profile, what a run
//     there gets without a file. The one place that needs no such check
//     is airlock.yaml (.yml, .json) directly at the root of a writable
//     path: the sandbox keeps that read-only in every run.
//   - A policy outside every such path, never trusted, is trusted by place,
//     as a file the person wrote.
//
// A policy that asks for less confinement than the trusted one is refused,
// naming the file, what it widens and the fix.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/internal/privfile"
	"github.com/airlock-run/airlock/mediator"
	"github.com/airlock-run/airlock/policy"
)

// maxPolicyFile bounds a policy file airlock trusts or reads for trust.
const maxPolicyFile = 1 << 20

// maxTrustedFile bounds the trusted list and the record of box-writable
// paths airlock reads.
const maxTrustedFile = 16 << 20

// TrustedPath is the person's trusted list: $XDG_CONFIG_HOME/airlock/
// trusted.yaml, else ~/.config/airlock/trusted.yaml.
func TrustedPath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "airlock", "trusted.yaml"), nil
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".config", "airlock", "trusted.yaml"), nil
	}
	return "", errs.Unavailablef("policy trust: no place for the trusted list: neither XDG_CONFIG_HOME nor HOME is an absolute path")
}

// BoxWritableRecordPath is where airlock records the paths it granted a
// box in fix mode: $XDG_STATE_HOME/airlock/box-writable, else
// ~/.local/state/airlock/box-writable.
func BoxWritableRecordPath(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "airlock", "box-writable"), nil
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "airlock", "box-writable"), nil
	}
	return "", errs.Unavailablef("policy: no place for the record of box-writable paths: neither XDG_STATE_HOME nor HOME is an absolute path")
}

// TrustEntry is one trusted policy: its path, the SHA-256 of its content,
// when it was trusted and the content itself (shown as the old side of
// the diff when the file is trusted again).
type TrustEntry struct {
	Path    string    `yaml:"path"`
	SHA256  string    `yaml:"sha256"`
	Trusted time.Time `yaml:"trusted"`
	Content string    `yaml:"content"`
}

type trustFile struct {
	Policies []TrustEntry `yaml:"policies"`
}

const trustHeader = "# airlock's trusted policies (airlock policy trust FILE): a policy whose\n# SHA-256 is here is the person's, wherever it lies.\n"

// LoadTrusted reads the trusted list at path; a missing file is an empty
// list. Anything else wrong is an error: airlock does not guess which
// policies the person trusted.
func LoadTrusted(path string) ([]TrustEntry, error) {
	data, err := readBounded(path, maxTrustedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "trusted policies %s", path)
	}
	var tf trustFile
	if err := yaml.Unmarshal(data, &tf); err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "trusted policies %s (fix or remove it, then airlock policy trust FILE again)", path)
	}
	for i, e := range tf.Policies {
		if !filepath.IsAbs(e.Path) || len(e.SHA256) != 64 {
			return nil, errs.Invalidf("trusted policies %s: entry %d: want an absolute path and a SHA-256 (fix or remove it)", path, i+1)
		}
	}
	return tf.Policies, nil
}

// TrustResult is what Trust did.
type TrustResult struct {
	// Path is the trusted file, absolute; SHA256 its content's digest.
	Path, SHA256 string
	// Content is what was trusted.
	Content string
	// Previous is the entry this one replaced for the same path, nil when
	// the path was never trusted.
	Previous *TrustEntry
}

// Trust records the SHA-256 and content of the policy file at file (read
// against dir) in the trusted list at listPath. The file must be a valid
// policy. The list is written through privfile, never through a link.
func Trust(listPath, dir, file string, now time.Time) (TrustResult, error) {
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	file = filepath.Clean(file)
	data, err := readBounded(file, maxPolicyFile)
	if err != nil {
		return TrustResult{}, errs.Wrap(errs.Invalid, err, "policy trust")
	}
	if _, err := policy.Parse(file, data); err != nil {
		return TrustResult{}, err
	}
	entries, err := LoadTrusted(listPath)
	if err != nil {
		return TrustResult{}, err
	}
	res := TrustResult{Path: file, SHA256: digest(data), Content: string(data)}
	kept := entries[:0]
	for _, e := range entries {
		if e.Path == file {
			prev := e
			res.Previous = &prev
			continue
		}
		kept = append(kept, e)
	}
	kept = append(kept, TrustEntry{Path: file, SHA256: res.SHA256, Trusted: now.UTC().Truncate(time.Second), Content: res.Content})
	out, err := yaml.Marshal(trustFile{Policies: kept})
	if err != nil {
		return res, errs.Wrap(errs.Internal, err, "policy trust")
	}
	if err := privfile.WriteFile(listPath, append([]byte(trustHeader), out...), 0o600, privfile.Options{MakeDirs: true}); err != nil {
		return res, errs.Wrap(errs.Unavailable, err, "policy trust: write %s", listPath)
	}
	return res, nil
}

// recordBoxWritable adds the paths a box of this kernel may write to the
// record at path, so a later run knows a box may have written below them.
// Both spellings of each are kept.
func recordBoxWritable(path string, writable []string) error {
	known, err := loadBoxWritable(path)
	if err != nil {
		return err
	}
	var add bytes.Buffer
	for _, w := range writable {
		for _, s := range spellings(w) {
			if !slices.Contains(known, s) && !strings.ContainsRune(s, '\n') {
				known = append(known, s)
				add.WriteString(s + "\n")
			}
		}
	}
	if add.Len() == 0 {
		return nil
	}
	f, err := privfile.OpenAppend(path, os.O_WRONLY, 0o600, privfile.Options{MakeDirs: true, BoxWritable: writable})
	if err != nil {
		return errs.Wrap(errs.Unavailable, err, "record of box-writable paths")
	}
	defer f.Close()
	if _, err := f.Write(add.Bytes()); err != nil {
		return errs.Wrap(errs.Unavailable, err, "record of box-writable paths")
	}
	return nil
}

// LoadBoxWritableRecord is the record of the paths airlock granted a box
// in fix mode (at BoxWritableRecordPath); a missing record holds none. The
// host takes no program of airlock's own from below them (the airlock-mcp
// and airlock-node the airlock binary hands over to): a box may have put it
// there.
func LoadBoxWritableRecord(getenv func(string) string) ([]string, error) {
	path, err := BoxWritableRecordPath(getenv)
	if err != nil {
		return nil, err
	}
	return loadBoxWritable(path)
}

// loadBoxWritable reads the record of box-writable paths; a missing file
// records none.
func loadBoxWritable(path string) ([]string, error) {
	data, err := readBounded(path, maxTrustedFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "record of box-writable paths %s", path)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if l := sc.Text(); filepath.IsAbs(l) {
			out = append(out, filepath.Clean(l))
		}
	}
	return out, nil
}

// trustCheck is what checkTrust needs besides the policy.
type trustCheck struct {
	file    string // absolute, clean
	data    []byte
	workdir string
	home    string
	trusted []TrustEntry
	written []string // recorded box-writable paths
}

// checkTrust decides whether p, read from c.file, may be in force (see
// the comment at the top of this file).
func checkTrust(p *policy.Policy, c trustCheck) error {
	sum := digest(c.data)
	var prev *TrustEntry
	for i, e := range c.trusted {
		if e.SHA256 == sum {
			return nil
		}
		if e.Path == c.file {
			prev = &c.trusted[i]
		}
	}
	w := World(c.workdir, c.home, policy.Fix)
	var base *policy.Policy
	what := ""
	switch {
	case prev != nil:
		old, err := policy.Parse(c.file, []byte(prev.Content))
		if err != nil {
			return errs.Wrap(errs.Invalid, err, "policy %s: the version trusted on %s no longer reads (airlock policy trust %s)",
				c.file, prev.Trusted.Format(time.DateOnly), c.file)
		}
		base, what = old, "the version you trusted on "+prev.Trusted.Format(time.DateOnly)
	default:
		own, _ := BoxWritable(p, w)
		if where := writableAt(c.file, append(own, c.written...)); where != "" {
			base, what = policy.Workspace(), "the built-in workspace profile, since a box may have written it (it lies in "+where+")"
		}
	}
	if base == nil {
		return nil // trusted by place
	}
	if wider := widerThan(p, base, w); len(wider) > 0 {
		return errs.New(errs.Denied, "policy %s asks for less confinement than %s (%s); read it, and if it is yours run: airlock policy trust %s",
			c.file, what, strings.Join(wider, ", "), c.file)
	}
	return nil
}

// defaultNames are the files the sandbox keeps read-only at the root of
// every writable path.
var defaultNames = []string{"airlock.yaml", "airlock.yml", "airlock.json"}

// writableAt returns the path of writable that file lies in (at either
// spelling), other than as a default policy file at its root, or "".
func writableAt(file string, writable []string) string {
	for _, f := range spellings(file) {
		for _, wr := range writable {
			for _, ws := range spellings(wr) {
				if !within(f, ws) {
					continue
				}
				if filepath.Dir(f) == ws && slices.Contains(defaultNames, filepath.Base(f)) {
					continue
				}
				return wr
			}
		}
	}
	return ""
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// spellings is a path as written and with its links resolved.
func spellings(p string) []string {
	out := []string{filepath.Clean(p)}
	if r, err := mediator.Resolve(out[0]); err == nil && r != out[0] {
		out = append(out, r)
	}
	return out
}

// widerThan names every section in which p asks for less confinement than
// base; nil when p is at most as wide. It errs on the side of "wider":
// an entry it cannot compare (a glob, a changed tool rule) counts.
func widerThan(p, base *policy.Policy, w policy.World) []string {
	var out []string
	add := func(s string, wider bool) {
		if wider {
			out = append(out, s)
		}
	}
	add("isolation: none", p.Isolation == "none" && base.Isolation != "none")
	add("fs.read", !pathsCovered(p.FS.Read, append(slices.Clone(base.FS.Read), base.FS.Write...), w))
	add("fs.write", !pathsCovered(p.FS.Write, base.FS.Write, w))
	add("net.allow", !subset(p.Net.Allow, base.Net.Allow))
	add("net.deny", !subset(base.Net.Deny, p.Net.Deny))
	add("net.dns", base.Net.DNS == "none" && p.Net.DNS != "none")
	add("shell.allow", base.Shell.Allow != nil && (p.Shell.Allow == nil || !subset(p.Shell.Allow, base.Shell.Allow)))
	add("shell.raw", !base.Shell.RawAllowed() && p.Shell.RawAllowed())
	add("shell.spawn", p.Shell.Spawn && !base.Shell.Spawn)
	add("shell.args", argsWider(p.Shell.Args, base.Shell.Args))
	add("env.allow", !subset(p.Env.Allow, base.Env.Allow))
	add("env.set", !setSubset(p.Env.Set, base.Env.Set))
	add("tools", toolsWider(p.Tools, base.Tools))
	add("limits", limitWider(float64(p.Limits.Memory), float64(base.Limits.Memory)) || limitWider(p.Limits.CPU, base.Limits.CPU) ||
		limitWider(float64(p.Limits.Wall), float64(base.Limits.Wall)) || limitWider(float64(p.Limits.Pids), float64(base.Limits.Pids)) ||
		limitWider(float64(p.Limits.ModelTokens), float64(base.Limits.ModelTokens)))
	// A secret bound to one more host sends the real value there; a model
	// allowed spends the operator's key on it.
	add("secrets", secretsWider(p.Secrets, base.Secrets) || passesWithheld(p, base, w))
	add("models.allow", p.Models != nil && (base.Models == nil || !subset(p.Models.Allow, base.Models.Allow)))
	add("sandbox.ptrace", p.Sandbox.Ptrace && !base.Sandbox.Ptrace)
	return out
}

// pathsCovered reports whether every entry of ps lies within an entry of
// base, both taken as a box of w would.
func pathsCovered(ps, base []string, w policy.World) bool {
	abs := func(e string) string {
		switch {
		case e == "~" || strings.HasPrefix(e, "~/"):
			return filepath.Join(w.Home, strings.TrimPrefix(e, "~"))
		case !filepath.IsAbs(e):
			return filepath.Join(w.Workdir, e)
		}
		return filepath.Clean(e)
	}
	for _, e := range ps {
		ok := false
		for _, b := range base {
			if e == b {
				ok = true
				break
			}
			if !strings.ContainsAny(e+b, "*?[") && within(abs(e), abs(b)) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func setSubset(a, b map[string]string) bool {
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

// argsWider: for a program base has rules for, p must keep every deny and
// escalate and allow no more than base allows.
func argsWider(p, base map[string]policy.ArgRules) bool {
	for prog, b := range base {
		r, ok := p[prog]
		if !ok {
			return true
		}
		if !subset(b.Deny, r.Deny) || !subset(b.Escalate, r.Escalate) {
			return true
		}
		if b.Allow != nil && (r.Allow == nil || !subset(r.Allow, b.Allow)) {
			return true
		}
	}
	return false
}

func toolsWider(p, base map[string]policy.ToolRule) bool {
	for name, r := range p {
		b, ok := base[name]
		if !ok || fmt.Sprint(r) != fmt.Sprint(b) {
			return true
		}
	}
	// A rule base had and p dropped leaves the tool to the default.
	for name := range base {
		if _, ok := p[name]; !ok {
			return true
		}
	}
	return false
}

// limitWider: zero is no limit.
// secretsWider reports whether p binds a secret base does not bind, or
// binds one otherwise (another host, header or form): any difference counts.
func secretsWider(p, base map[string]policy.SecretBinding) bool {
	for name, b := range p {
		if have, ok := base[name]; !ok || !reflect.DeepEqual(b, have) {
			return true
		}
	}
	return false
}

// passesWithheld reports whether p would pass in clear a variable base
// withholds from the box: a bound secret's (the box held only its
// placeholder) or a provider key the model proxy holds. Dropping the
// binding while env.allow names the variable hands the box the value.
func passesWithheld(p, base *policy.Policy, w policy.World) bool {
	modelKeys := []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} // the mediator's
	var names []string
	for name, b := range base.Secrets {
		names = append(names, name, b.SigV4)
	}
	if base.HasModels() {
		names = append(names, modelKeys...)
	}
	var c *policy.Checker
	for _, name := range names {
		if name == "" || p.Withheld(name) || (p.HasModels() && slices.Contains(modelKeys, name)) {
			continue
		}
		if c == nil {
			var err error
			if c, err = p.Compile(w); err != nil {
				return true // cannot tell: wider
			}
		}
		if c.Env(name).Verdict == policy.Allow {
			return true
		}
	}
	return false
}

func limitWider(p, base float64) bool { return base > 0 && (p == 0 || p > base) }

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// readBounded reads at most max bytes of path; a longer file is an error.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is over %d bytes", path, max)
	}
	return data, nil
}
