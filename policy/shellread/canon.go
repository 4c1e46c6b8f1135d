package shellread

import (
	"strings"
	"sync"
)

// Canonical arguments
//
// Canon(prog, args) returns args (without the program name) in one spelling,
// so that equivalent command lines compare equal and argument patterns can
// be matched against them. For a program in the table below:
//
//   - every option is one element; short clusters are split (-rf → -f, -r);
//   - a long option with a short equivalent becomes the short one
//     (--recursive → -r, --force → -f); one without keeps "--name";
//     unambiguous prefixes count (--rec, --r);
//   - an option with a value carries it in the same element after "=":
//     -o FILE, -oFILE, --output FILE and --output=FILE all become "-o=FILE";
//     an optional value (sed -i.bak, --in-place=.bak) likewise ("-i=.bak");
//   - synonyms become one letter (rm/cp -R → -r; chmod/chown -R stays -R);
//   - options come first, sorted by byte value with exact duplicates of
//     options without a value removed, then the operands in their order;
//   - "--" is kept (just before the operands) only when an operand starts
//     with "-", so `rm -- -x` stays distinguishable from `rm -x`;
//   - git: its own options, the subcommand, the subcommand's options, then
//     the subcommand's operands (git push --force origin main → push -f
//     origin main); tar: an old-style first word (tar xzf a.tgz) is read as
//     options (-f=a.tgz -x -z); dd: the KEY=VALUE operands are sorted;
//     find: unchanged, its expression depends on order.
//
// For any other program Canon only splits a cluster of letters (-la → -a,
// -l) in place and leaves everything else as it is, because which options
// take a value is unknown. A word with a glob character (* ? [) is never
// split or mapped, so patterns keep their globs; a value may hold globs
// ("--output=*" → "-o=*").

// canonSpec is the option syntax of one program.
type canonSpec struct {
	flags    string             // short options without a value
	valued   string             // short options with a value
	optional string             // short options with an optional attached value
	alias    map[byte]byte      // short synonyms: R → r
	long     map[string]longOpt // long name → canonical form
	operands string             // "dd": KEY=VALUE operands sorted; "find": untouched
	modes    bool               // chmod: -w, -rwx are modes (operands), not options
	subs     map[string]*canonSpec
}

// longOpt is the canonical form of one long option.
type longOpt struct {
	short byte // 0: keep as --name
	value byte // 0 none, '=' required, '?' optional (only as --name=value)
}

// spec builds a canonSpec. longs is a space-separated list of entries:
// "name" (flag), "name=" (takes a value), "name?" (optional =value), each
// optionally followed by ":x" to map it to the short option x.
func spec(flags, valued, optional, aliases, longs string) *canonSpec {
	s := &canonSpec{flags: flags, valued: valued, optional: optional, long: map[string]longOpt{}}
	for i := 0; i+1 < len(aliases); i += 2 {
		if s.alias == nil {
			s.alias = map[byte]byte{}
		}
		s.alias[aliases[i]] = aliases[i+1]
	}
	for _, e := range strings.Fields(longs) {
		var lo longOpt
		name, short, _ := strings.Cut(e, ":")
		if short != "" {
			lo.short = short[0]
		}
		if n := len(name); n > 0 && (name[n-1] == '=' || name[n-1] == '?') {
			lo.value = name[n-1]
			name = name[:n-1]
		}
		s.long[name] = lo
	}
	return s
}

// canonSpecs is built on first use: a process that never reads a shell
// string (most runs of airlock) does not pay for it at start.
var canonSpecs = sync.OnceValue(func() map[string]*canonSpec {
	return map[string]*canonSpec{
		"rm": spec("dfiIrRv", "", "", "Rr", "force:f recursive:r dir:d verbose:v interactive? one-file-system preserve-root? no-preserve-root"),
		"cp": spec("abdfiHlLnPprRsTuvxZ", "St", "", "Rr", "archive:a backup?:b force:f interactive:i link:l dereference:L "+
			"no-clobber:n no-dereference:P recursive:r symbolic-link:s suffix=:S target-directory=:t no-target-directory:T "+
			"update?:u verbose:v one-file-system:x preserve? no-preserve= parents reflink? remove-destination sparse= "+
			"strip-trailing-slashes attributes-only copy-contents debug context?:Z keep-directory-symlink"),
		"mv": spec("bfinTuvZ", "St", "", "", "backup?:b force:f interactive:i no-clobber:n suffix=:S target-directory=:t "+
			"no-target-directory:T update?:u verbose:v strip-trailing-slashes exchange no-copy context:Z debug"),
		"chmod": withModes(spec("cfvR", "", "", "", "changes:c silent:f quiet:f verbose:v recursive:R reference= preserve-root no-preserve-root")),
		"chown": spec("cfvhRHLP", "", "", "", "changes:c silent:f quiet:f verbose:v no-dereference:h recursive:R "+
			"dereference from= reference= preserve-root no-preserve-root"),
		"curl": spec("0123456aBfgGhiIjJklLMnNOpqRsSvVZ#", "AbcCdDeEFHKmoPQrtTuUwxXyYz", "", "", "output=:o remote-name:O "+
			"silent:s show-error:S location:L fail:f insecure:k data=:d header=:H request=:X user=:u user-agent=:A include:i "+
			"head:I verbose:v upload-file=:T proxy=:x cookie=:b cookie-jar=:c form=:F referer=:e max-time=:m config=:K "+
			"write-out=:w continue-at=:C range=:r cert=:E dump-header=:D get:G globoff:g netrc:n append:a remote-time:R "+
			"junk-session-cookies:j remote-header-name:J list-only:l manual:M no-buffer:N proxytunnel:p disable:q "+
			"ipv4:4 ipv6:6 http1.0:0 tlsv1:1 sslv2:2 sslv3:3 quote=:Q progress-bar:# proxy-user=:U telnet-option=:t "+
			"time-cond=:z speed-time=:y speed-limit=:Y ftp-port=:P use-ascii:B version:V help:h compressed "+
			"data-binary= data-raw= data-urlencode= url= output-dir= create-dirs retry= connect-timeout= "+
			"no-progress-meter fail-with-body location-trusted max-redirs= json= unix-socket= resolve= connect-to= "+
			"cacert= key= oauth2-bearer= remote-name-all http2 http1.1 tlsv1.2 tlsv1.3 proto= proto-redir="),
		"wget": spec("qvdbcNSrmkKpExFhV46", "OoaiBtTwPUelARDIXQ", "", "", "output-document=:O output-file=:o "+
			"append-output=:a quiet:q verbose:v debug:d background:b continue:c timestamping:N server-response:S "+
			"recursive:r mirror:m convert-links:k backup-converted:K page-requisites:p adjust-extension:E "+
			"force-directories:x force-html:F help:h version:V input-file=:i base=:B tries=:t timeout=:T wait=:w "+
			"directory-prefix=:P user-agent=:U execute=:e level=:l accept=:A reject=:R domains=:D "+
			"include-directories=:I exclude-directories=:X quota=:Q inet4-only:4 inet6-only:6 header= post-data= "+
			"post-file= user= password= no-check-certificate use-askpass= spider no-verbose no-clobber "+
			"no-directories no-host-directories no-parent https-only"),
		"tar": spec("AcdrtuxzjJZavkmOopPSUWhlMwBGiRns", "fCbFgHIKLNTVX", "", "", "extract:x get:x create:c list:t "+
			"append:r update:u catenate:A concatenate:A diff:d compare:d delete file=:f directory=:C gzip:z gunzip:z "+
			"bzip2:j xz:J compress:Z auto-compress:a verbose:v keep-old-files:k touch:m to-stdout:O "+
			"preserve-permissions:p same-permissions:p absolute-names:P sparse:S unlink-first:U verify:W "+
			"dereference:h check-links:l multi-volume:M interactive:w read-full-records:B incremental:G "+
			"ignore-zeros:i block-number:R seek:n same-order:s blocking-factor=:b info-script=:F new-volume-script=:F "+
			"listed-incremental=:g format=:H use-compress-program=:I starting-file=:K tape-length=:L newer=:N "+
			"after-date=:N files-from=:T label=:V exclude-from=:X exclude= to-command= checkpoint-action= checkpoint? "+
			"overwrite remove-files zstd lzma lzip no-same-owner same-owner strip-components= transform= owner= "+
			"group= mode= wildcards no-recursion recursion one-file-system warning= totals? null"),
		"sed": spec("nErsuz", "efl", "i", "rE", "expression=:e file=:f in-place?:i quiet:n silent:n regexp-extended:E "+
			"separate:s unbuffered:u null-data:z line-length=:l posix debug sandbox follow-symlinks help version"),
		"dd":   {operands: "dd"},
		"find": {operands: "find"},
		"git": withSubs(spec("pPhv", "Cc", "", "", "paginate:p no-pager:P git-dir= work-tree= namespace= exec-path? "+
			"bare no-replace-objects literal-pathspecs glob-pathspecs noglob-pathspecs icase-pathspecs "+
			"no-optional-locks config-env= super-prefix= list-cmds= attr-source= no-advice help:h version:v"),
			map[string]*canonSpec{
				"push": spec("fnqvdu46", "o", "", "", "force:f force-with-lease? force-if-includes dry-run:n delete:d "+
					"set-upstream:u quiet:q verbose:v push-option=:o all branches mirror tags follow-tags atomic no-verify "+
					"verify prune porcelain repo= receive-pack= exec= ipv4:4 ipv6:6 signed? recurse-submodules= thin no-thin"),
				"clean": spec("dfinqxX", "e", "", "", "force:f dry-run:n interactive:i quiet:q exclude=:e"),
				"commit": spec("apsvqnezio", "mFcCt", "Su", "", "all:a patch:p signoff:s verbose:v quiet:q no-verify:n "+
					"edit:e null:z include:i only:o message=:m file=:F reedit-message=:c reuse-message=:C template=:t "+
					"amend no-edit allow-empty allow-empty-message fixup= squash= author= date= gpg-sign?:S "+
					"untracked-files?:u no-gpg-sign dry-run"),
				"checkout": spec("fqmpdl", "bB", "t", "", "force:f quiet:q merge:m patch:p track?:t orphan= detach:d "+
					"ours theirs conflict= ignore-other-worktrees overwrite-ignore no-track"),
				"switch": spec("fqmd", "cC", "t", "", "create=:c force-create=:C force:f discard-changes quiet:q merge:m "+
					"detach:d track?:t orphan= no-track guess no-guess"),
				"branch": spec("dDfmMcCrailqv", "u", "t", "", "delete:d force:f move:m copy:c remotes:r all:a list:l "+
					"quiet:q verbose:v set-upstream-to=:u unset-upstream contains= merged? no-merged? track?:t "+
					"show-current sort= format= no-track"),
				"reset": spec("qpN", "", "", "", "hard soft mixed merge keep quiet:q patch:p intent-to-add:N "+
					"recurse-submodules? pathspec-from-file="),
				"rm": spec("rfnq", "", "", "", "force:f dry-run:n quiet:q cached ignore-unmatch sparse pathspec-from-file="),
				"add": spec("nvfipeuAN", "", "", "", "dry-run:n verbose:v force:f interactive:i patch:p edit:e update:u "+
					"all:A no-all intent-to-add:N refresh ignore-errors ignore-missing chmod= pathspec-from-file= sparse"),
				"fetch": spec("afmnpPqtuv46", "j", "", "", "all append:a force:f multiple:m dry-run:n prune:p prune-tags:P "+
					"quiet:q tags:t update-head-ok:u verbose:v jobs=:j depth= upload-pack= ipv4:4 ipv6:6 unshallow "+
					"recurse-submodules? no-tags"),
				"pull": spec("qvfne", "sX", "r", "", "quiet:q verbose:v rebase?:r no-rebase ff no-ff ff-only force:f all "+
					"squash commit no-commit edit:e no-edit autostash no-autostash strategy=:s strategy-option=:X "+
					"depth= upload-pack= dry-run:n"),
				"tag": spec("adfslnv", "mFu", "", "", "annotate:a delete:d force:f sign:s list:l verify:v message=:m "+
					"file=:F local-user=:u contains= points-at= sort= format="),
				"rebase": spec("iqvfmnkp", "xsX", "r", "", "exec=:x interactive:i force-rebase:f onto= root autosquash "+
					"continue abort skip quiet:q verbose:v strategy=:s strategy-option=:X autostash keep-base "+
					"update-refs no-verify merge:m rebase-merges?:r"),
				"config": spec("lez", "f", "", "", "global system local worktree file=:f list:l edit:e unset unset-all "+
					"add get get-all replace-all null:z show-origin type= blob= bool int"),
			}),
	}
})

func withModes(s *canonSpec) *canonSpec {
	s.modes = true
	return s
}

func withSubs(s *canonSpec, subs map[string]*canonSpec) *canonSpec {
	s.subs = subs
	return s
}

// Canon returns args, the arguments of prog (argv without argv[0]), in the
// canonical form described above. prog is matched on its base name.
func Canon(prog string, args []string) []string {
	return AppendCanon(make([]string, 0, len(args)+2), prog, args)
}

// AppendCanon appends the canonical form of args to dst and returns it. It
// allocates only for options whose value is joined to them ("-o=FILE") and
// when dst is too small.
func AppendCanon(dst []string, prog string, args []string) []string {
	sp := canonSpecs()[baseName(prog)]
	if sp == nil {
		return appendGeneric(dst, args)
	}
	switch sp.operands {
	case "find":
		return append(dst, args...)
	case "dd":
		start := len(dst)
		dst = append(dst, args...)
		sortStrings(dst[start:])
		return dst
	}
	if baseName(prog) == "tar" {
		start := len(dst)
		if len(args) > 0 && oldTar(args[0], sp) {
			dst = appendOldTar(dst, sp, args)
		} else {
			dst, _ = appendSpec(dst, sp, args, false)
		}
		if len(dst) > start && oldTar(dst[start], sp) {
			// An operand first would read back as old-style options.
			dst = append(dst, "")
			copy(dst[start+1:], dst[start:])
			dst[start] = "--"
		}
		return dst
	}
	if sp.subs == nil {
		dst, _ = appendSpec(dst, sp, args, false)
		return dst
	}
	// git: its own options stop at the first word, the subcommand.
	dst, next := appendSpec(dst, sp, args, true)
	if next > 0 && args[next-1] == "--" {
		// `git -- …`: no subcommand follows; keep the rest as it is.
		return append(dst, args[next-1:]...)
	}
	if next >= len(args) {
		return dst
	}
	sub := args[next]
	dst = append(dst, sub)
	if ss := sp.subs[sub]; ss != nil {
		subStart := len(dst)
		dst, _ = appendSpec(dst, ss, args[next+1:], false)
		if sub == "push" {
			dst = pushForce(dst, subStart)
		}
		return dst
	}
	return appendGeneric(dst, args[next+1:])
}

// appendGeneric splits letter-only clusters in place.
func appendGeneric(dst []string, args []string) []string {
	for i, a := range args {
		if a == "--" {
			return append(dst, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && allLetters(a[1:]) {
			start := len(dst)
			for k := 1; k < len(a); k++ {
				dst = append(dst, shortOpt(a[k]))
			}
			sortStrings(dst[start:])
			dst = dedupe(dst, start)
			continue
		}
		dst = append(dst, a)
	}
	return dst
}

func allLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// appendSpec appends the options of args, sorted, and then the operands.
// With stopAtWord, parsing stops at the first operand, whose index is
// returned and which is not appended.
func appendSpec(dst []string, sp *canonSpec, args []string, stopAtWord bool) ([]string, int) {
	start := len(dst)
	next := len(args)
	dashdash := -1
	// First pass: options. consumed marks (for the first 64 words) the
	// option words and their values, so the second pass need not parse
	// again.
	var consumed uint64
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			dashdash = i
			break
		}
		if !isOption(a, sp) {
			if stopAtWord {
				next = i
				break
			}
			continue
		}
		var n int
		dst, n = appendOption(dst, sp, args, i)
		for k := i; k <= i+n && k < 64; k++ {
			consumed |= 1 << k
		}
		i += n
	}
	sortStrings(dst[start:])
	dst = dedupe(dst, start)
	if stopAtWord {
		if dashdash >= 0 {
			next = dashdash + 1
		}
		return dst, next
	}
	// Second pass: operands, in order.
	opStart := len(dst)
	needDash := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			for _, b := range args[i+1:] {
				dst = append(dst, b)
				if strings.HasPrefix(b, "-") {
					needDash = true
				}
			}
			break
		}
		if i < 64 {
			if consumed&(1<<i) != 0 {
				continue
			}
		} else if isOption(a, sp) {
			i += optionWidth(sp, args, i)
			continue
		}
		dst = append(dst, a)
		if strings.HasPrefix(a, "-") && a != "-" {
			needDash = true
		}
	}
	if needDash {
		dst = append(dst, "")
		copy(dst[opStart+1:], dst[opStart:])
		dst[opStart] = "--"
	}
	return dst, next
}

// isOption reports whether a is an option for sp (not an operand). A word
// with a glob, "-" alone, and for chmod a mode such as -w or -rwx, are
// operands.
func isOption(a string, sp *canonSpec) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	if a[1] == '-' {
		return true
	}
	if sp.modes {
		for k := 1; k < len(a); k++ {
			if strings.IndexByte(sp.flags, a[k]) < 0 {
				return false // a mode like -w, -rwx
			}
		}
	}
	return true
}

// optionWidth is how many extra words the option at args[i] consumes.
func optionWidth(sp *canonSpec, args []string, i int) int {
	var tmp [16]string
	_, n := appendOption(tmp[:0], sp, args, i)
	return n
}

// appendOption appends the canonical form of the option at args[i] and
// returns how many following words it consumed as its value.
func appendOption(dst []string, sp *canonSpec, args []string, i int) ([]string, int) {
	a := args[i]
	if hasGlob(a) && strings.IndexByte(a, '=') < 0 {
		return append(dst, a), 0
	}
	if strings.HasPrefix(a, "--") {
		name, val, has := strings.Cut(a[2:], "=")
		lo, exact, ok := lookupLong(sp, name)
		if !ok {
			return append(dst, a), 0
		}
		used := 0
		if lo.value == '=' && !has {
			// A missing value at the end is an empty one, so that the
			// canonical form reads back the same.
			has = true
			if i+1 < len(args) {
				val, used = args[i+1], 1
			}
		}
		if lo.short == 0 {
			if exact && used == 0 {
				return append(dst, a), 0 // already canonical; no allocation
			}
			full := longName(sp, lo, name)
			if !has {
				return append(dst, "--"+full), used
			}
			return append(dst, "--"+full+"="+val), used
		}
		if !has {
			return append(dst, shortOpt(lo.short)), used
		}
		return append(dst, shortOpt(lo.short)+"="+val), used
	}
	for k := 1; k < len(a); k++ {
		c := a[k]
		if to, ok := sp.alias[c]; ok {
			c = to
		}
		switch {
		case strings.IndexByte(sp.valued, a[k]) >= 0:
			if k+1 < len(a) {
				// "-o=FILE" is the canonical spelling, so it reads back
				// as the value FILE.
				return append(dst, shortOpt(c)+"="+strings.TrimPrefix(a[k+1:], "=")), 0
			}
			if i+1 < len(args) {
				return append(dst, shortOpt(c)+"="+args[i+1]), 1
			}
			return append(dst, shortOpt(c)+"="), 0
		case strings.IndexByte(sp.optional, a[k]) >= 0:
			if k+1 < len(a) {
				return append(dst, shortOpt(c)+"="+strings.TrimPrefix(a[k+1:], "=")), 0
			}
			return append(dst, shortOpt(c)), 0
		default:
			dst = append(dst, shortOpt(c))
		}
	}
	return dst, 0
}

// lookupLong finds a long option by its name or, as GNU getopt does, by any
// unambiguous prefix (`rm --r --f` is `rm --recursive --force`).
func lookupLong(sp *canonSpec, name string) (lo longOpt, exact, ok bool) {
	if lo, ok := sp.long[name]; ok {
		return lo, true, true
	}
	if name == "" {
		return longOpt{}, false, false
	}
	var found longOpt
	n := 0
	for k, lo := range sp.long {
		if strings.HasPrefix(k, name) {
			if n == 1 && lo.short != 0 && lo == found {
				continue // two long names for one short option
			}
			found = lo
			n++
		}
	}
	if n != 1 {
		return longOpt{}, false, false
	}
	return found, false, true
}

// hasGlob reports whether a holds a glob character (* ? [).
func hasGlob(a string) bool {
	for i := 0; i < len(a); i++ {
		if a[i] == '*' || a[i] == '?' || a[i] == '[' {
			return true
		}
	}
	return false
}

// longName is the full name of the option lo that name abbreviates.
func longName(sp *canonSpec, lo longOpt, name string) string {
	if _, ok := sp.long[name]; ok {
		return name
	}
	for k, v := range sp.long {
		if v == lo && strings.HasPrefix(k, name) {
			return k
		}
	}
	return name
}

// oldTar reports whether a is tar's old-style option word (xzf).
func oldTar(a string, sp *canonSpec) bool {
	if a == "" || a[0] == '-' {
		return false
	}
	for i := 0; i < len(a); i++ {
		if strings.IndexByte(sp.flags, a[i]) < 0 && strings.IndexByte(sp.valued, a[i]) < 0 {
			return false
		}
	}
	return true
}

// appendOldTar reads `tar xzf FILE …`: each value-taking letter takes the
// next word, in order.
func appendOldTar(dst []string, sp *canonSpec, args []string) []string {
	conv := make([]string, 0, len(args)+4)
	first := args[0]
	k := 1
	for i := 0; i < len(first); i++ {
		c := first[i]
		if strings.IndexByte(sp.valued, c) >= 0 && k < len(args) {
			conv = append(conv, shortOpt(c), args[k])
			k++
			continue
		}
		conv = append(conv, shortOpt(c))
	}
	conv = append(conv, args[k:]...)
	dst, _ = appendSpec(dst, sp, conv, false)
	return dst
}

// shortNames holds "-x" for every byte, so single options need no
// allocation.
var shortNames = sync.OnceValue(func() *[256]string {
	t := new([256]string)
	for i := range t {
		t[i] = "-" + string(rune(i))
		if i >= 0x80 {
			t[i] = string([]byte{'-', byte(i)})
		}
	}
	return t
})

func shortOpt(c byte) string { return shortNames()[c] }

// sortStrings sorts in place without allocating (insertion sort; option
// lists are short).
func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// dedupe removes exact duplicates of value-less options in the sorted
// dst[start:].
func dedupe(dst []string, start int) []string {
	w := start
	for i := start; i < len(dst); i++ {
		if i > start && dst[i] == dst[w-1] && !strings.Contains(dst[i], "=") {
			continue
		}
		dst[w] = dst[i]
		w++
	}
	return dst[:w]
}

// Spellings returns the ways an option in canonical form can be written:
// the canonical form itself and each long name that means it ("-f" of git
// push → "-f", "--force"; "-o=out" of curl → "-o=out", "--output=out").
// A pattern whose option has a glob ("--force*") cannot be canonicalised;
// matching it against every spelling of each canonical option of a call
// keeps its meaning. sub is git's subcommand ("" for other programs); the
// program's own options are included too.
func Spellings(prog, sub, opt string) []string {
	out := []string{opt}
	if !strings.HasPrefix(opt, "-") || strings.HasPrefix(opt, "--") || len(opt) < 2 {
		return out
	}
	short := opt[1]
	val, hasVal := "", false
	if len(opt) > 2 {
		if opt[2] != '=' {
			return out
		}
		val, hasVal = opt[3:], true
	}
	sp := canonSpecs()[baseName(prog)]
	if sp == nil {
		return out
	}
	specs := []*canonSpec{sp}
	if ss := sp.subs[sub]; ss != nil {
		specs = []*canonSpec{ss, sp}
	}
	for _, s := range specs {
		for name, lo := range s.long {
			if lo.short != short {
				continue
			}
			if hasVal {
				out = append(out, "--"+name+"="+val)
			} else {
				out = append(out, "--"+name)
			}
		}
		// Short synonyms (rm -R for -r).
		for from, to := range s.alias {
			if to == short {
				if hasVal {
					out = append(out, shortOpt(from)+"="+val)
				} else {
					out = append(out, shortOpt(from))
				}
			}
		}
	}
	sortStrings(out[1:])
	return out
}

// pushForce adds -f to a canonical git push whose refspec starts with "+"
// (`git push origin +feature` force-pushes feature, as -f would), so a
// pattern that denies `push -f` holds whichever spelling is used.
func pushForce(dst []string, start int) []string {
	k := start
	for k < len(dst) && strings.HasPrefix(dst[k], "-") && dst[k] != "--" {
		if dst[k] == "-f" {
			return dst
		}
		k++
	}
	plus := false
	for _, op := range dst[k:] {
		if len(op) > 1 && op[0] == '+' {
			plus = true
		}
	}
	if !plus {
		return dst
	}
	dst = append(dst, "")
	copy(dst[k+1:], dst[k:])
	dst[k] = "-f"
	sortStrings(dst[start : k+1])
	return dst
}
