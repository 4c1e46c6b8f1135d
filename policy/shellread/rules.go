package shellread

import (
	"path"
	"strings"
)

// Rule is a built-in command rule: a kind of command that a person must
// approve before it runs, whatever the policy says.
type Rule struct {
	// ID names the rule; the policy reports it as "builtin.<ID>".
	ID string `json:"id"`
	// Summary says what the rule catches, for documentation.
	Summary string `json:"summary"`
	// Reason is one sentence safe to show the agent.
	Reason string `json:"reason"`
}

// Where places the paths of a command: the working directory the string
// starts in and the home directory. Both are absolute; an empty Workdir
// makes every relative path unknown, an empty Home every home path.
type Where struct {
	Workdir, Home string
	// Scratch lists absolute directories private to the box the command
	// runs in (its own /tmp), whose removal harms nothing outside it; a
	// word starting with $TMPDIR is taken to be in the first of them.
	// Nil on the host.
	Scratch []string
}

// The built-in rules, in the order they are checked. docs/command-rules.md
// holds the same table.
var builtinRules = []Rule{
	{ID: "rm-root", Summary: "recursive delete of / (rm -r /, rm -rf /*, --no-preserve-root)",
		Reason: "a recursive delete of the root directory needs a person's approval"},
	{ID: "rm-home", Summary: "recursive delete of the home directory or one of its ancestors (~, $HOME)",
		Reason: "a recursive delete of the home directory needs a person's approval"},
	{ID: "rm-outside", Summary: "recursive delete (rm -r, find -delete, find -exec rm -r, tar --remove-files, zip -m, rsync --delete) of a path outside the working directory, or of a path only known at run time",
		Reason: "a recursive delete outside the working directory needs a person's approval"},
	{ID: "download-exec", Summary: "downloaded code run by an interpreter: curl|sh, wget -O- …|bash, …|python, sh <(curl …), bash -c \"$(curl …)\", eval \"$(curl …)\"",
		Reason: "running code straight from a download needs a person's approval"},
	{ID: "mkfs", Summary: "creating a file system or swap area (mkfs, mkfs.*, mke2fs, mkswap, …)",
		Reason: "formatting a file system needs a person's approval"},
	{ID: "dd-device", Summary: "dd writing to a device (of=/dev/…, other than null, zero, stdout, stderr, tty, fd)",
		Reason: "writing raw data to a device needs a person's approval"},
	{ID: "device-write", Summary: "a redirect, tee or cp writing to a disk or memory device (/dev/sd*, /dev/nvme*, /dev/vd*, /dev/mmcblk*, /dev/mem, …)",
		Reason: "writing to a disk device needs a person's approval"},
	{ID: "fork-bomb", Summary: "a function that starts itself more than once at a time (:(){ :|:& };:, named variants)",
		Reason: "a command that multiplies itself without end needs a person's approval"},
	{ID: "chmod-recursive", Summary: "chmod -R, chown -R or chgrp -R of / or of a path outside the working directory",
		Reason: "changing permissions or owners recursively outside the working directory needs a person's approval"},
	{ID: "wipe-device", Summary: "shred of a device, wipefs -a / --all / -o, blkdiscard",
		Reason: "wiping a device needs a person's approval"},
	{ID: "git-force-main", Summary: "git push or send-pack that overwrites or deletes any branch of a remote (-f, --force*, --mirror, --delete, --prune, +refspec, :ref, a -c remote.*.mirror or +push setting)",
		Reason: "overwriting or deleting a branch of a remote needs a person's approval"},
}

// Builtin returns the built-in command rules. They are on even when no
// policy is configured.
func Builtin() []Rule {
	return append([]Rule(nil), builtinRules...)
}

func rule(id string) Rule {
	for _, r := range builtinRules {
		if r.ID == id {
			return r
		}
	}
	return Rule{ID: id}
}

// Catastrophic reports the first built-in rule that cmds[i] matches. It
// needs all of cmds because pipelines and substitutions matter: in
// `curl … | sh` it is sh that matches, because of what feeds it. It does not
// allocate when nothing matches.
func Catastrophic(cmds []Command, i int, where Where) (Rule, bool) {
	if i < 0 || i >= len(cmds) {
		return Rule{}, false
	}
	c := &cmds[i]
	if id := deviceRedirect(c); id != "" {
		return rule(id), true
	}
	if id := forkBomb(cmds, i); id != "" {
		return rule(id), true
	}
	if len(c.Argv) == 0 || len(c.Dynamic) > 0 && c.Dynamic[0] == 0 {
		return Rule{}, false
	}
	base := baseName(c.Argv[0])
	if interpreter(base) {
		if downloadFeeds(cmds, i) {
			return rule("download-exec"), true
		}
	}
	id := ""
	switch {
	case base == "rm":
		id = rmRule(cmds, i, where)
	case base == "find":
		id = findDelete(cmds, i, where)
	case base == "tar" || base == "gtar" || base == "bsdtar" || base == "zip" || base == "rsync":
		id = archiveRemove(c, base, where)
	case base == "chmod" || base == "chown" || base == "chgrp":
		id = chmodRule(c, where)
	case base == "dd":
		id = ddRule(c)
	case isMkfs(base):
		id = "mkfs"
	case base == "shred" || base == "wipefs" || base == "blkdiscard":
		id = wipeRule(c, base)
	case base == "tee" || base == "cp":
		for _, a := range c.Argv[1:] {
			if diskDevice(a) {
				id = "device-write"
			}
		}
	case base == "git":
		id = gitForceMain(c)
	}
	if id != "" {
		return rule(id), true
	}
	return Rule{}, false
}

// deviceRedirect: a write redirection to a disk or memory device.
func deviceRedirect(c *Command) string {
	for _, r := range c.Redirects {
		// A program's own file arguments (dd of=, shred) have rules of
		// their own, which say more; tee and cp are held here.
		if r.Write && diskDevice(r.Path) && (!r.Arg || c.Argv[0] != "dd" && c.Argv[0] != "shred" && !strings.HasSuffix(c.Argv[0], "/dd") && !strings.HasSuffix(c.Argv[0], "/shred")) {
			return "device-write"
		}
	}
	return ""
}

// diskDevice reports whether p names a block device or raw memory.
func diskDevice(p string) bool {
	if !strings.HasPrefix(p, "/dev/") {
		return false
	}
	d := p[len("/dev/"):]
	for _, pre := range []string{"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk/", "mapper/", "dm-", "md",
		"loop", "sr", "nbd", "rbd", "zd", "ubd", "mtd", "mem", "kmem", "port", "root"} {
		if strings.HasPrefix(d, pre) {
			return true
		}
	}
	return false
}

// interpreter reports whether a program runs code it reads.
func interpreter(base string) bool {
	if interpreterShells[base] {
		return true
	}
	switch base {
	case "eval", "source", ".", "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "node",
		"nodejs", "deno", "bun", "php", "lua", "luajit", "tclsh", "wish", "Rscript", "awk", "gawk", "mawk",
		"nawk", "osascript", "pwsh", "powershell", "fish", "csh", "tcsh", "xonsh", "elvish", "nu":
		return true
	}
	// python3.12, perl5.36, php8.2 …
	for _, p := range []string{"python", "perl", "ruby", "php", "lua", "node"} {
		if strings.HasPrefix(base, p) && len(base) > len(p) && (base[len(p)] >= '0' && base[len(p)] <= '9') {
			return true
		}
	}
	return false
}

// downloader reports whether a program fetches data from the network.
func downloader(base string) bool {
	switch base {
	case "curl", "wget", "wget2", "fetch", "aria2c", "http", "https", "xh", "xhs", "lwp-request", "GET",
		"lynx", "links", "w3m", "nc", "ncat", "netcat", "socat", "ftp", "tftp", "scp", "rsync":
		return true
	}
	return false
}

// downloadFeeds reports whether a downloader's output reaches cmds[i]: an
// earlier pipeline stage, or a command or process substitution in its
// arguments or redirections (also through wrappers: `sudo bash` reads what
// was piped into sudo).
func downloadFeeds(cmds []Command, i int) bool {
	c := &cmds[i]
	if readsProgram(c) {
		for _, u := range c.Upstream {
			if u >= 0 && u < len(cmds) && len(cmds[u].Argv) > 0 && downloader(baseName(cmds[u].Argv[0])) {
				return true
			}
		}
	}
	// Standard input taken from another descriptor (`exec 3< <(curl …);
	// sh <&3`): any download into a substitution may be what it reads.
	dupIn := false
	for _, r := range c.Redirects {
		if r.Op == "<&" && (r.Fd == "" || r.Fd == "0") {
			dupIn = true
		}
	}
	// Substitutions held by this command, or by a wrapper that starts it.
	for j := range cmds {
		if cmds[j].How != "cmdsubst" && cmds[j].How != "procsubst" {
			continue
		}
		if len(cmds[j].Argv) == 0 || !downloader(baseName(cmds[j].Argv[0])) {
			continue
		}
		if dupIn && readsProgram(c) {
			return true
		}
		for p := cmds[j].Parent; p >= 0 && p < len(cmds); {
			if p == i || holds(cmds, p, i) {
				return true
			}
			break
		}
	}
	return false
}

// holds reports whether cmds[i] is reached through cmds[p] by wrappers or a
// nested script.
func holds(cmds []Command, p, i int) bool {
	for k, n := cmds[i].Parent, 0; k >= 0 && k < len(cmds) && n < len(cmds); k, n = cmds[k].Parent, n+1 {
		if k == p {
			return true
		}
	}
	return false
}

// recursive reports whether canonical rm/chmod options ask for recursion.
func hasOpt(canon []string, opts ...string) bool {
	for _, a := range canon {
		if a == "--" {
			return false
		}
		for _, o := range opts {
			if a == o {
				return true
			}
		}
	}
	return false
}

// operands returns the operands of canonical args (after the options).
func operands(canon []string) []string {
	for k, a := range canon {
		if a == "--" {
			return canon[k+1:]
		}
		if len(a) < 2 || a[0] != '-' {
			return canon[k:]
		}
	}
	return nil
}

// place classifies one path operand.
type place int

const (
	inside place = iota
	outside
	home
	root
	unknown
)

// locate resolves p (raw when dynamic) against the command's directory and
// says where it lies. Globs are resolved to the directory they expand in.
func locate(p string, dynamic bool, dir string, where Where) place {
	if p == "" {
		return unknown
	}
	var abs string
	switch {
	case dynamic && len(where.Scratch) > 0 && tmpdirWord(p) != "":
		abs = where.Scratch[0] + tmpdirWord(p)
		if abs = path.Clean(abs); abs == where.Scratch[0] {
			return unknown // $TMPDIR itself, or an empty rest: keep asking
		}
	case dynamic && isHomeWord(p):
		if where.Home == "" {
			return unknown
		}
		abs = where.Home + homeRest(p)
	case dynamic:
		// A glob: the directory before the first glob character, if the
		// rest cannot climb out of it.
		k := strings.IndexAny(p, "*?[")
		if k < 0 || strings.ContainsAny(p, "$`~\\'\"{") {
			return unknown
		}
		prefix, rest := p[:k], p[k:]
		slash := strings.LastIndexByte(prefix, '/')
		globDir := "."
		if slash >= 0 {
			globDir, rest = prefix[:slash+1], prefix[slash+1:]+rest
		} else {
			rest = prefix + rest
		}
		for _, comp := range strings.Split(rest, "/") {
			if strings.HasPrefix(comp, ".") || strings.HasPrefix(comp, "[") {
				return unknown
			}
		}
		base := locate(globDir, false, dir, where)
		if base == inside && rest != "" {
			return inside
		}
		// `rm -rf /*` deletes what / holds: as bad as /.
		if globDir == "/" {
			return root
		}
		if base == inside {
			return inside
		}
		return base
	case path.IsAbs(p):
		abs = p
	default:
		d, ok := baseDir(dir, where)
		if !ok {
			return unknown
		}
		abs = d + "/" + p
	}
	abs = path.Clean(abs)
	switch {
	case abs == "/":
		return root
	case where.Home != "" && (abs == path.Clean(where.Home) || strings.HasPrefix(path.Clean(where.Home), abs+"/")):
		return home
	}
	for _, sd := range where.Scratch {
		if strings.HasPrefix(abs, path.Clean(sd)+"/") {
			return inside
		}
	}
	if where.Workdir == "" {
		return unknown
	}
	wd := path.Clean(where.Workdir)
	if strings.Count(abs, "/") == 1 && abs != wd {
		return outside // a top-level directory (/etc, /usr) is never the work
	}
	if abs == wd || strings.HasPrefix(abs, wd+"/") || wd == "/" {
		return inside
	}
	return outside
}

// TmpdirRest returns the rest after $TMPDIR of a raw word such as
// `"$TMPDIR"/x` or `"${TMPDIR}/x"`, starting with "/", when the rest is
// plain text that cannot climb out of it; "" otherwise.
func TmpdirRest(word string) string { return tmpdirWord(word) }

// tmpdirWord returns the rest after $TMPDIR of a word `"$TMPDIR"/x`,
// `$TMPDIR/x`, `"${TMPDIR}/x"` …, starting with "/", when the rest is plain
// text that cannot climb out; "" otherwise.
func tmpdirWord(p string) string {
	for _, pre := range []string{`"$TMPDIR"`, `"${TMPDIR}"`, `$TMPDIR`, `${TMPDIR}`, `"$TMPDIR`, `"${TMPDIR}`} {
		rest, ok := strings.CutPrefix(p, pre)
		if !ok {
			continue
		}
		if strings.HasPrefix(pre, `"`) && !strings.HasSuffix(pre, `"`) {
			var closed bool
			rest, closed = strings.CutSuffix(rest, `"`)
			if !closed {
				return ""
			}
		}
		if !strings.HasPrefix(rest, "/") || strings.ContainsAny(rest, "$`\\'\"*?[{~") {
			return ""
		}
		for _, comp := range strings.Split(rest, "/") {
			if comp == ".." {
				return ""
			}
		}
		return rest
	}
	return ""
}

// baseDir is the absolute directory a command with Dir runs in.
func baseDir(dir string, where Where) (string, bool) {
	switch {
	case dir == "?":
		return "", false
	case dir == "":
		return where.Workdir, where.Workdir != ""
	case dir == "~" || strings.HasPrefix(dir, "~/"):
		return where.Home + dir[1:], where.Home != ""
	case path.IsAbs(dir):
		return dir, true
	default:
		return where.Workdir + "/" + dir, where.Workdir != ""
	}
}

// worst orders places by how bad a recursive change there is.
func worst(a, b place) place {
	rank := func(p place) int { return [...]int{0, 2, 3, 4, 1}[p] }
	if rank(b) > rank(a) {
		return b
	}
	return a
}

func placeRule(p place, prefix string) string {
	switch p {
	case root:
		if prefix == "rm" {
			return "rm-root"
		}
		return "chmod-recursive"
	case home:
		if prefix == "rm" {
			return "rm-home"
		}
		return "chmod-recursive"
	case outside, unknown:
		if prefix == "rm" {
			return "rm-outside"
		}
		return "chmod-recursive"
	}
	return ""
}

func dynamicAt(c *Command, argIndex int) bool {
	for _, d := range c.Dynamic {
		if d == argIndex {
			return true
		}
	}
	return false
}

// operandPlaces locates the operands of c (raw argv, so Dynamic indexes
// apply), skipping the first skip operands (chmod's mode).
func operandPlaces(c *Command, isOpt func(string) bool, skip int, where Where) place {
	p := inside
	dashdash := false
	n := 0
	for k := 1; k < len(c.Argv); k++ {
		a := c.Argv[k]
		if !dashdash && a == "--" {
			dashdash = true
			continue
		}
		if !dashdash && !dynamicAt(c, k) && isOpt(a) {
			continue
		}
		n++
		if n <= skip {
			continue
		}
		p = worst(p, locate(a, dynamicAt(c, k), c.Dir, where))
	}
	return p
}

func rmRule(cmds []Command, i int, where Where) string {
	c := &cmds[i]
	var buf [32]string
	canon := AppendCanon(buf[:0], "rm", c.Argv[1:])
	if !hasOpt(canon, "-r") {
		return ""
	}
	if hasOpt(canon, "--no-preserve-root") {
		return "rm-root"
	}
	isOpt := func(a string) bool { return len(a) > 1 && a[0] == '-' }
	p := operandPlaces(c, isOpt, 0, where)
	if c.ArgsFromInput {
		// The paths arrive at run time: from find's starting points, or
		// from anywhere (xargs).
		if f := c.Parent; f >= 0 && f < len(cmds) && c.How == "wrapper" && len(cmds[f].Argv) > 0 && baseName(cmds[f].Argv[0]) == "find" {
			p = worst(p, findStarts(&cmds[f], where))
		} else {
			p = worst(p, unknown)
		}
	}
	return placeRule(p, "rm")
}

// findStarts locates find's starting points.
func findStarts(c *Command, where Where) place {
	p := inside
	n := 0
	for k := 1; k < len(c.Argv); k++ {
		a := c.Argv[k]
		if a == "-H" || a == "-L" || a == "-P" || strings.HasPrefix(a, "-O") {
			continue
		}
		if a == "-D" {
			k++
			continue
		}
		if strings.HasPrefix(a, "-") && !dynamicAt(c, k) || a == "(" || a == "!" {
			break
		}
		n++
		p = worst(p, locate(a, dynamicAt(c, k), c.Dir, where))
	}
	if n == 0 {
		p = worst(p, locate(".", false, c.Dir, where))
	}
	return p
}

// findDelete: find … -delete deletes recursively below its starting points.
func findDelete(cmds []Command, i int, where Where) string {
	c := &cmds[i]
	del := false
	for _, a := range c.Argv[1:] {
		if a == "-delete" {
			del = true
		}
	}
	if !del {
		return ""
	}
	return placeRule(findStarts(c, where), "rm")
}

// archiveRemove: tar --remove-files and zip -m (--move) delete what they
// archive, rsync --delete* what the source lacks, directories and all. Every operand is taken as a path removed
// (the archive's own name too: better asked than missed).
func archiveRemove(c *Command, base string, where Where) string {
	removes := false
	for k, a := range c.Argv[1:] {
		if a == "--" {
			break
		}
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(a[2:], "=")
			full := []string{"remove-files"}
			switch base {
			case "zip":
				full = []string{"move"}
			case "rsync":
				// --delete and its variants remove what the source
				// lacks from the destination, directories and all.
				full = []string{"delete", "delete-before", "delete-during", "delete-delay", "delete-after",
					"delete-excluded", "delete-missing-args", "del", "remove-source-files"}
			}
			for _, f := range full {
				if len(name) >= 3 && strings.HasPrefix(f, name) {
					removes = true
				}
			}
		case base == "zip" && len(a) > 1 && a[0] == '-' && !dynamicAt(c, k+1):
			// A cluster of flags holding m, before any option that
			// takes the rest of the word as its value.
			for _, ch := range a[1:] {
				if strings.ContainsRune("bnPtsOZxiUTI", ch) {
					break
				}
				if ch == 'm' {
					removes = true
				}
			}
		}
	}
	if !removes {
		return ""
	}
	isOpt := func(a string) bool { return len(a) > 1 && a[0] == '-' }
	return placeRule(operandPlaces(c, isOpt, 0, where), "rm")
}

func chmodRule(c *Command, where Where) string {
	var buf [32]string
	canon := AppendCanon(buf[:0], "chown", c.Argv[1:])
	if baseName(c.Argv[0]) == "chmod" {
		canon = AppendCanon(buf[:0], "chmod", c.Argv[1:])
	}
	if !hasOpt(canon, "-R") {
		return ""
	}
	sp := canonSpecs()["chmod"]
	if baseName(c.Argv[0]) != "chmod" {
		sp = canonSpecs()["chown"]
	}
	skip := 1
	if hasPrefixOpt(canon, "--reference=") {
		skip = 0
	}
	isOpt := func(a string) bool { return isOption(a, sp) }
	p := operandPlaces(c, isOpt, skip, where)
	return placeRule(p, "chmod")
}

func hasPrefixOpt(canon []string, pre string) bool {
	for _, a := range canon {
		if strings.HasPrefix(a, pre) {
			return true
		}
	}
	return false
}

func ddRule(c *Command) string {
	for k, a := range c.Argv[1:] {
		if !strings.HasPrefix(a, "of=") {
			continue
		}
		if dynamicAt(c, k+1) {
			return "dd-device"
		}
		t := a[len("of="):]
		if !strings.HasPrefix(path.Clean(t), "/dev/") {
			continue
		}
		switch t = path.Clean(t); {
		case t == "/dev/null", t == "/dev/zero", t == "/dev/stdout", t == "/dev/stderr", t == "/dev/tty",
			t == "/dev/full", strings.HasPrefix(t, "/dev/fd/"), strings.HasPrefix(t, "/dev/shm/"):
			continue
		}
		return "dd-device"
	}
	return ""
}

func isMkfs(base string) bool {
	return strings.HasPrefix(base, "mkfs") || base == "mke2fs" || base == "mkswap" || base == "mkdosfs" ||
		base == "mkntfs" || base == "newfs" || base == "mkexfatfs"
}

func wipeRule(c *Command, base string) string {
	switch base {
	case "blkdiscard":
		return "wipe-device"
	case "wipefs":
		for _, a := range c.Argv[1:] {
			if a == "--all" || strings.HasPrefix(a, "--offset") || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "ao") {
				return "wipe-device"
			}
		}
	case "shred":
		for k, a := range c.Argv[1:] {
			if strings.HasPrefix(a, "/dev/") || dynamicAt(c, k+1) && !strings.HasPrefix(a, "-") {
				return "wipe-device"
			}
		}
	}
	return ""
}

// gitForceMain: a push that overwrites or deletes what is on the remote,
// whatever branch it names. A branch name is no safe test: `HEAD`, `@` and
// `refs/heads/*:refs/heads/*` name main as surely as `main` does, and any
// shared branch is someone's work.
func gitForceMain(c *Command) string {
	var buf [32]string
	canon := AppendCanon(buf[:0], "git", c.Argv[1:])
	k := 0
	for ; k < len(canon) && strings.HasPrefix(canon[k], "-"); k++ {
		// `git -c remote.origin.mirror=true push` and a configured
		// `+refspec` force a push that names nothing forced.
		if v, ok := strings.CutPrefix(canon[k], "-c="); ok && strings.HasPrefix(v, "remote.") {
			key, val, _ := strings.Cut(v, "=")
			if strings.HasSuffix(key, ".mirror") || strings.HasSuffix(key, ".push") && strings.Contains(val, "+") {
				return "git-force-main"
			}
		}
	}
	if k >= len(canon) || canon[k] != "push" && canon[k] != "send-pack" {
		return ""
	}
	rest := canon[k+1:]
	for j, a := range rest {
		if a == "--" {
			rest = append(rest[:j:j], rest[j+1:]...)
			break
		}
		if a == "-f" || a == "-d" || a == "--mirror" {
			return "git-force-main"
		}
		if forcingLong(a) {
			return "git-force-main"
		}
	}
	ops := operands(rest)
	if len(ops) > 0 && canon[k] == "push" {
		ops = ops[1:] // the first operand is the remote
	}
	for _, r := range ops {
		// +src:dst forces; :dst (an empty source) deletes.
		if strings.HasPrefix(r, "+") || strings.HasPrefix(r, ":") {
			return "git-force-main"
		}
	}
	return ""
}

// gitPushLong are the long options of git push and send-pack, for
// resolving abbreviations the way git's option parser does: an exact name,
// or a prefix of exactly one name (`--forc` is ambiguous, git refuses it).
var gitPushLong = []string{"verbose", "quiet", "repo", "all", "branches", "mirror", "delete", "tags", "dry-run",
	"porcelain", "force", "force-with-lease", "force-if-includes", "recurse-submodules", "thin", "receive-pack",
	"exec", "set-upstream", "progress", "prune", "no-verify", "verify", "follow-tags", "signed", "atomic",
	"push-option", "ipv4", "ipv6", "stateless-rpc", "helper-status", "stdin"}

// forcingLong reports whether a is a long option of git push that forces
// or deletes, spelled out or abbreviated as git accepts it.
func forcingLong(a string) bool {
	name, ok := strings.CutPrefix(a, "--")
	if !ok || name == "" {
		return false
	}
	name, _, _ = strings.Cut(name, "=")
	switch resolveLong(gitPushLong, name) {
	case "force", "force-with-lease", "mirror", "delete", "prune":
		return true
	}
	return false
}

// resolveLong resolves a long option name against names as getopt_long and
// git's parse-options do: the exact name, else the one name it is a prefix
// of; "" when it names none or more than one (the program refuses it).
func resolveLong(names []string, name string) string {
	found := ""
	for _, n := range names {
		if n == name {
			return n
		}
		if strings.HasPrefix(n, name) {
			if found != "" {
				return ""
			}
			found = n
		}
	}
	return found
}

// forkBomb: cmds[i] calls a function that starts itself in the background
// or in a pipeline.
func forkBomb(cmds []Command, i int) string {
	c := &cmds[i]
	if len(c.Argv) == 0 || len(c.Dynamic) > 0 && c.Dynamic[0] == 0 {
		return ""
	}
	name := c.Argv[0]
	for j := range cmds {
		d := &cmds[j]
		if d.InFunc != name || len(d.Argv) == 0 || d.Argv[0] != name || d.How == "wrapper" {
			// `ls(){ command ls | head; }` calls the program, not itself.
			continue
		}
		if d.Background || len(d.Upstream) > 0 {
			return "fork-bomb"
		}
		// Its pipeline partner sits in the same body.
		for k := range cmds {
			if cmds[k].InFunc != name {
				continue
			}
			for _, u := range cmds[k].Upstream {
				if u == j {
					return "fork-bomb"
				}
			}
		}
	}
	return ""
}

// readsProgram reports whether an interpreter takes its program from its
// standard input: no inline code option (-c, -e, -m, -r …) and no script
// operand other than "-" or /dev/stdin. awk and friends read a program only
// from -f.
func readsProgram(c *Command) bool {
	base := baseName(c.Argv[0])
	var code, valued string
	switch {
	case interpreterShells[base] || base == "fish" || base == "csh" || base == "tcsh":
		code, valued = "c", "oO"
	case strings.HasPrefix(base, "python") || strings.HasPrefix(base, "pypy"):
		code, valued = "cm", "WX"
	case strings.HasPrefix(base, "perl"), strings.HasPrefix(base, "ruby"), base == "lua", base == "luajit":
		code, valued = "eE", "IrlCx0"
	case strings.HasPrefix(base, "node"):
		code, valued = "ep", "r"
	case strings.HasPrefix(base, "php"):
		code, valued = "rBRFE", "cdz"
	case base == "awk" || base == "gawk" || base == "mawk" || base == "nawk" || base == "busybox":
		for k := 1; k+1 < len(c.Argv); k++ {
			if c.Argv[k] == "-f" && stdinPath(c.Argv[k+1]) {
				return true
			}
		}
		return false
	case base == "eval" || base == "source" || base == ".":
		return len(c.Argv) > 1 && stdinPath(c.Argv[1])
	default:
		return true // deno, bun, pwsh, …: assume they may
	}
	for k := 1; k < len(c.Argv); k++ {
		a := c.Argv[k]
		if a == "--" || a == "-" {
			return true
		}
		if strings.HasPrefix(a, "--") {
			if a == "--eval" || a == "--print" || strings.HasPrefix(a, "--eval=") || a == "--command" {
				return false
			}
			if a == "--rcfile" || a == "--init-file" || a == "--require" {
				k++
			}
			continue
		}
		if len(a) > 1 && (a[0] == '-' || a[0] == '+') {
			for j := 1; j < len(a); j++ {
				if strings.IndexByte(code, a[j]) >= 0 {
					return false
				}
				if strings.IndexByte(valued, a[j]) >= 0 {
					if j == len(a)-1 {
						k++
					}
					break
				}
			}
			continue
		}
		return stdinPath(a)
	}
	return true
}

func stdinPath(p string) bool {
	return p == "-" || p == "/dev/stdin" || p == "/dev/fd/0" || p == "/proc/self/fd/0"
}
