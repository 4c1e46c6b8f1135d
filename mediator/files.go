package mediator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/runner"
	"github.com/airlock-run/airlock/sandbox"
)

// FileResult is what a file call made.
type FileResult struct {
	Outcome Outcome
	// Text is the file's content, the listing, the matches, or the
	// confirmation of a write; when Failed, why the program failed.
	Text string
	// Path is the absolute path the call was decided on; its name tells
	// fit what kind of text a read returned.
	Path   string
	Failed bool
}

// File decides a file call (KindRead, KindWrite, KindList, KindSearch) on
// its path and carries it out with a small program of airlock's choosing
// (head, sh, find, grep) inside the box an exec call gets, with no network:
// this process runs unconfined, so a path decided here could be swapped for
// a link before this process opened it, while in the box a link to anything
// the policy does not grant leads nowhere. A relative Path is read against
// the working directory. The program is not decided again as a command: it
// is airlock's, not the model's.
func (k *Kernel) File(ctx context.Context, call Call) (FileResult, error) {
	argv, stdin, err := k.fileProgram(&call)
	if err != nil {
		return FileResult{}, err
	}
	out, err := k.decideFront(ctx, call)
	res := FileResult{Outcome: out, Path: call.Path}
	if err != nil {
		return res, err
	}
	if k.afterDecide != nil {
		k.afterDecide(call)
	}
	b, err := k.box(ctx, call, "a file tool", false, nil)
	if err != nil {
		return res, err
	}
	defer b.stop()
	if b.spec.Exec != nil {
		// The box's exec wall names the file tools' own programs, not the
		// policy's: nothing else runs in this box.
		b.spec.Exec = &sandbox.ExecSpec{Programs: fileToolPrograms}
	}
	var stdout, stderr bytes.Buffer
	r, err := k.runBox(ctx, runner.Request{Argv: argv, Spec: b.spec, Tier: b.tier, Stdin: stdin,
		Stdout: &stdout, Stderr: &stderr, OutputCap: k.run.outputCap}, false)
	if rerr := k.recordRun(ctx, call, r, err); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return res, err
	}
	res.Text, res.Failed = k.fileText(call, r.ExitCode, stdout.String(), stderr.String())
	return res, nil
}

// fileProgram checks call, makes its path absolute and names the program
// that carries it out.
func (k *Kernel) fileProgram(call *Call) (argv []string, stdin io.Reader, err error) {
	def := ""
	if call.Kind == KindList || call.Kind == KindSearch {
		def = "."
	}
	if call.Path, err = k.absPath(call.Kind, call.Path, def); err != nil {
		return nil, nil, err
	}
	switch call.Kind {
	case KindRead:
		// head stops at one byte over the cap, so an endless file (a
		// device, a pipe) ends the program instead of running to the
		// time limit.
		return []string{"head", "-c", strconv.Itoa(MaxResult + 1), "--", call.Path}, nil, nil
	case KindWrite:
		if call.Content == nil {
			return nil, nil, errs.Invalidf("write: content is required (the file's whole new content)")
		}
		sum := sha256.Sum256([]byte(*call.Content))
		call.ContentSHA256 = hex.EncodeToString(sum[:])
		return []string{"sh", "-c", writeScript, "sh", call.Path}, strings.NewReader(*call.Content), nil
	case KindList:
		// Five NUL-ended fields an entry: depth, type, size, link target,
		// name (a name may hold any byte but NUL and /). Depth 0 is the
		// path itself.
		return []string{"find", "-H", call.Path, "-maxdepth", "1", "-printf", `%d\0%y\0%s\0%l\0%f\0`}, nil, nil
	case KindSearch:
		if call.Pattern == "" {
			return nil, nil, errs.Invalidf("search: pattern is required")
		}
		return []string{"grep", "-rnHIE", "--exclude-dir=.git", "-e", call.Pattern, "--", call.Path}, nil, nil
	}
	return nil, nil, errs.Invalidf("file: a %s call is not a file call", call.Kind)
}

// fileToolPrograms are the programs fileProgram names (and writeScript
// runs).
var fileToolPrograms = []string{"head", "find", "grep", "sh", "dirname", "mkdir", "cat"}

// writeScript makes the file's directory and writes standard input to it;
// the path is an argument, never part of the script.
const writeScript = `d=$(dirname -- "$1") && mkdir -p -- "$d" && cat > "$1"`

// absPath makes a call's path absolute: relative paths are read against the
// working directory. The policy decides the result (and its
// symlink-resolved form).
func (k *Kernel) absPath(kind Kind, p, def string) (string, error) {
	if p == "" {
		p = def
	}
	if p == "" {
		return "", errs.Invalidf("%s: path is required", kind)
	}
	if strings.ContainsRune(p, 0) {
		return "", errs.Invalidf("%s: the path holds a NUL byte", kind)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(k.world.Workdir, p)
	}
	return filepath.Clean(p), nil
}

// fileText turns the program's output into what the model reads.
func (k *Kernel) fileText(call Call, code int, stdout, stderr string) (string, bool) {
	rel := k.rel(call.Path)
	// The front end's name for the call (read_file) reads better to the
	// model than the kind.
	name := nonEmpty(call.Tool, string(call.Kind))
	failed := func() (string, bool) { return boxError(name, rel, code, stderr), true }
	switch call.Kind {
	case KindRead:
		if code != 0 {
			return failed()
		}
		return stdout, false
	case KindWrite:
		if code != 0 {
			return failed()
		}
		return fmt.Sprintf("wrote %d bytes to %s\n", len(*call.Content), rel), false
	case KindList:
		if code != 0 && stdout == "" {
			return failed()
		}
		text, isDir := formatEntries(stdout)
		if !isDir {
			return fmt.Sprintf("%s %s: not a directory (read it as a file)", name, rel), true
		}
		return text, false
	default: // KindSearch
		switch {
		case code == 1 && stdout == "":
			return fmt.Sprintf("no matches for %q in %s\n", call.Pattern, rel), false
		case code > 1 && stdout == "":
			return failed()
		}
		// Paths under the working directory are shown relative to it.
		w := k.world.Workdir + "/"
		return strings.TrimPrefix(strings.ReplaceAll(stdout, "\n"+w, "\n"), w), false
	}
}

// rel shows an absolute path relative to the working directory when it is
// inside it.
func (k *Kernel) rel(p string) string {
	if r, err := filepath.Rel(k.world.Workdir, p); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
		return r
	}
	return p
}

// boxError is what the model reads when a file call's program failed. The
// programs name the absolute path; the model gave a relative one.
func boxError(name, path string, code int, stderr string) string {
	msg := strings.TrimSpace(stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit code %d", code)
	}
	return fmt.Sprintf("%s %s: %s", name, path, msg)
}

// formatEntries turns find's fields into one line an entry, sorted by name;
// isDir says whether the listed path (depth 0) is a directory.
func formatEntries(raw string) (text string, isDir bool) {
	f := strings.Split(raw, "\x00")
	var lines []string
	for i := 0; i+4 < len(f); i += 5 {
		depth, typ, size, target, name := f[i], f[i+1], f[i+2], f[i+3], shown(f[i+4])
		if depth == "0" {
			isDir = typ == "d"
			continue
		}
		switch typ {
		case "d":
			lines = append(lines, name+"/")
		case "f":
			lines = append(lines, name+"\t"+size+" bytes")
		case "l":
			lines = append(lines, name+" -> "+shown(target))
		default:
			lines = append(lines, name+"\t("+kindName(typ)+")")
		}
	}
	sort.Strings(lines)
	if len(lines) == 0 {
		return "(empty directory)\n", isDir
	}
	return strings.Join(lines, "\n") + "\n", isDir
}

// shown quotes a name that would not read as itself on one line.
func shown(name string) string {
	for _, r := range name {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return strconv.Quote(name)
		}
	}
	return name
}

func kindName(t string) string {
	switch t {
	case "p":
		return "fifo"
	case "s":
		return "socket"
	case "c":
		return "character device"
	case "b":
		return "block device"
	}
	return "type " + t
}
