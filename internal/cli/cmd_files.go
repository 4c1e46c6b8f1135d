package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/airlock-run/airlock/errs"
	"github.com/airlock-run/airlock/files"
)

// localTenant is the tenant the command line acts in: a machine's own store
// has one.
const localTenant = "local"

const storeHelp = `The store is --store, else $AIRLOCK_FILES, else $XDG_DATA_HOME/airlock/files,
else ~/.local/share/airlock/files. Files belong to a job tree: --tree, by
default one tree of the invoking user (user-UID), so files put from a shell
can be read back from it. When the operator names a key (--key-file FILE or
--key-env VAR, or $AIRLOCK_FILES_KEY_FILE / $AIRLOCK_FILES_KEY_ENV), files are
sealed with it (AES-256-GCM); a missing or wrong key is an error, never a file
kept in the clear.`

// storeFlags are the flags every command that opens the store takes.
type storeFlags struct {
	store, tree, keyFile, keyEnv *string
}

func addStoreFlags(fs *flag.FlagSet) *storeFlags {
	return &storeFlags{
		store:   fs.String("store", "", "the store's directory (default: $AIRLOCK_FILES or the user's data directory)"),
		tree:    fs.String("tree", "", "the job tree to act in (default: user-UID)"),
		keyFile: fs.String("key-file", "", "seal files with the 256-bit key in FILE (default: $AIRLOCK_FILES_KEY_FILE)"),
		keyEnv:  fs.String("key-env", "", "seal files with the 256-bit key in environment variable VAR (default: $AIRLOCK_FILES_KEY_ENV)"),
	}
}

// storeDir resolves where the local store lives.
func storeDir(env *Env, flagValue string) (string, error) {
	if flagValue != "" {
		return absFrom(env, flagValue), nil
	}
	if v := env.Getenv("AIRLOCK_FILES"); v != "" {
		return absFrom(env, v), nil
	}
	if v := env.Getenv("XDG_DATA_HOME"); v != "" && filepath.IsAbs(v) {
		return filepath.Join(v, "airlock", "files"), nil
	}
	if v := env.Getenv("HOME"); v != "" {
		return filepath.Join(v, ".local", "share", "airlock", "files"), nil
	}
	return "", errs.Unavailablef("no store directory (set --store, $AIRLOCK_FILES or $HOME)")
}

func absFrom(env *Env, p string) string {
	if !filepath.IsAbs(p) && env.Dir != "" {
		return filepath.Join(env.Dir, p)
	}
	return p
}

// open opens the store and returns it with the scope the command acts in.
func (sf *storeFlags) open(env *Env) (*files.Store, files.Scope, error) {
	dir, err := storeDir(env, *sf.store)
	if err != nil {
		return nil, files.Scope{}, err
	}
	keyFile, keyEnv := *sf.keyFile, *sf.keyEnv
	if keyFile == "" && keyEnv == "" {
		keyFile, keyEnv = env.Getenv("AIRLOCK_FILES_KEY_FILE"), env.Getenv("AIRLOCK_FILES_KEY_ENV")
	}
	opt := files.Options{Audit: func(_ context.Context, e files.Event) error {
		// The local command line has no audit log of its own; the event
		// goes to the diagnostics, as a record of what was done.
		env.Log.Info("files event", "type", e.Type, "tenant", e.Tenant, "tree", e.Tree, "job", e.Job, "by", e.By, "count", e.Count, "refs", len(e.Refs))
		return nil
	}}
	switch {
	case keyFile != "" && keyEnv != "":
		return nil, files.Scope{}, usagef("name a key file or a key variable, not both")
	case keyFile != "":
		if *sf.keyFile != "" {
			if _, err := os.Stat(absFrom(env, keyFile)); errors.Is(err, fs.ErrNotExist) {
				return nil, files.Scope{}, usagef("--key-file %s: no such file (create it with 32 random bytes, e.g. head -c32 /dev/urandom > %s)", keyFile, keyFile)
			}
		}
		opt.Keys = files.KeyFile(absFrom(env, keyFile))
	case keyEnv != "":
		opt.Keys = files.KeyEnv(keyEnv, env.Getenv)
	}
	st, err := files.Open(dir, opt)
	if err != nil {
		return nil, files.Scope{}, err
	}
	tree := *sf.tree
	if tree == "" {
		tree = "user-" + strconv.Itoa(os.Getuid())
	}
	return st, files.Scope{Tenant: localTenant, Tree: tree}, nil
}

// parseInterspersed parses flags that may come before or after the
// positional arguments (`airlock files get REF --tree t`), which the flag
// package alone stops at.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := ParseFlags(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// The flag package consumes a "--" and stops; all after it is
		// positional.
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// storeCall is what a files subcommand runs with: the open store, the scope
// the command line acts in, the positional arguments, and whether --tree was
// given (erasure and holds name a tree only when asked to).
type storeCall struct {
	st        *files.Store
	sc        files.Scope
	pos       []string
	treeGiven bool
}

// storeCmd builds a files subcommand: its flags (the store's and those flags
// adds), nargs positional arguments (-1: any), then run with the store open.
// A program without the store's SQLite driver (the airlock binary) hands
// the command to airlock-mcp, which links it.
func storeCmd(name, usage, short, long string, nargs int, flags func(*flag.FlagSet),
	run func(ctx context.Context, env *Env, c storeCall) error) *Command {
	path := "airlock files " + name
	return &Command{Name: name, Usage: usage, Short: short, Long: long,
		Run: func(ctx context.Context, env *Env, args []string) error {
			if !files.DriverLinked() {
				return handOverOrHelp(env, storeTool, []string{"files", name}, usage, long, args)
			}
			fs := NewFlags(env, path, usage, long)
			sf := addStoreFlags(fs)
			if flags != nil {
				flags(fs)
			}
			pos, err := parseInterspersed(fs, args)
			if err != nil {
				return err
			}
			if nargs >= 0 && len(pos) != nargs {
				return usagef("%s: wants %s, got %d arguments (see %s --help)", path, usage, len(pos), path)
			}
			st, sc, err := sf.open(env)
			if err != nil {
				return err
			}
			defer st.Close()
			return run(ctx, env, storeCall{st: st, sc: sc, pos: pos, treeGiven: *sf.tree != ""})
		}}
}

func filesCmd() *Command {
	return &Command{Name: "files", Usage: "COMMAND [FLAGS] [ARGS]", Short: "the content-addressed file store",
		Long: `Keeps files by the SHA-256 of their bytes (airlock-file:sha256:<hex>): results
too big for a model's context, and files one tool hands another. A file is
read only by the job tree that stored it, later turns of its conversation,
and trees a person handed it to; anyone else is told it is not found.

` + storeHelp,
		Sub: []*Command{filesPutCmd(), filesGetCmd(), filesLsCmd(), filesGCCmd(), filesEraseCmd(), filesHoldCmd(), filesCheckCmd(), filesHandCmd()}}
}

func filesPutCmd() *Command {
	const long = "Keeps FILE (or standard input for -) in the store, at most 32 MiB, and prints its reference.\n\n" + storeHelp
	var asJSON *bool
	return storeCmd("put", "[FLAGS] FILE|-", "keep a file and print its reference", long, 1,
		func(fs *flag.FlagSet) { asJSON = fs.Bool("json", false, `print {"ref": ..., "size": N, "tree": ...}`) },
		func(ctx context.Context, env *Env, c storeCall) error {
			var in io.Reader = env.Stdin
			if c.pos[0] != "-" {
				f, err := os.Open(absFrom(env, c.pos[0]))
				if err != nil {
					if os.IsNotExist(err) {
						return usagef("%s does not exist (name an existing file)", c.pos[0])
					}
					return errs.Wrap(errs.Invalid, err, "open %s", c.pos[0])
				}
				defer f.Close()
				in = f
			}
			if in == nil {
				return errs.Invalidf("no standard input (name a FILE)")
			}
			ref, err := c.st.PutReader(ctx, c.sc, in)
			if err != nil {
				return err
			}
			if *asJSON {
				info, err := c.st.Stat(ctx, c.sc, ref)
				if err != nil {
					return err
				}
				return json.NewEncoder(env.Stdout).Encode(map[string]any{"ref": ref.String(), "size": info.Size, "tree": c.sc.Tree})
			}
			_, err = fmt.Fprintln(env.Stdout, ref)
			return err
		})
}

func filesGetCmd() *Command {
	const long = "Writes the bytes of the file REF to standard output, after checking them against\ntheir digest.\n\n" + storeHelp
	return storeCmd("get", "[FLAGS] REF", "write a file's bytes to standard output", long, 1, nil,
		func(ctx context.Context, env *Env, c storeCall) error {
			ref, err := files.ParseRef(c.pos[0])
			if err != nil {
				return badValue(err, "")
			}
			_, err = c.st.GetTo(ctx, c.sc, ref, env.Stdout)
			return err
		})
}

func filesLsCmd() *Command {
	const long = "Lists the files of the tree: reference, size, how it came (stored or handed),\nwhen, and when retention removes it.\n\n" + storeHelp
	var asJSON *bool
	return storeCmd("ls", "[FLAGS]", "list the tree's files", long, 0,
		func(fs *flag.FlagSet) { asJSON = fs.Bool("json", false, "print the list as JSON") },
		func(ctx context.Context, env *Env, c storeCall) error {
			list, err := c.st.List(ctx, c.sc)
			if err != nil {
				return err
			}
			if *asJSON {
				if list == nil {
					list = []files.Info{}
				}
				return json.NewEncoder(env.Stdout).Encode(list)
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "REF\tSIZE\tVIA\tSTORED\tEXPIRES")
			for _, in := range list {
				exp := "-"
				if !in.Expires.IsZero() {
					exp = in.Expires.Format(time.DateOnly)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", in.Ref, in.Size, in.Via, in.Stored.Format(time.DateTime), exp)
			}
			return tw.Flush()
		})
}

func filesGCCmd() *Command {
	const long = "Removes the files whose trees last stored them more than 90 days ago (unless a\nlegal hold keeps them), and blobs a crash left without metadata.\n\n" + storeHelp
	var asJSON *bool
	return storeCmd("gc", "[FLAGS]", "remove files past retention", long, 0,
		func(fs *flag.FlagSet) { asJSON = fs.Bool("json", false, "print the report as JSON") },
		func(ctx context.Context, env *Env, c storeCall) error {
			rep, err := c.st.GC(ctx)
			if err != nil {
				return err
			}
			if *asJSON {
				return json.NewEncoder(env.Stdout).Encode(rep)
			}
			_, err = fmt.Fprintf(env.Stdout, "%d claims expired, %d files removed, %d stray blobs swept\n", rep.Expired, rep.Removed, rep.Swept)
			return err
		})
}

func filesEraseCmd() *Command {
	const long = "Erases the files of a job, of a tree, or of the whole local tenant: blob and\nmetadata. A legal hold over any of them refuses the erasure.\n\n" + storeHelp
	var job *string
	var tenant *bool
	return storeCmd("erase", "[FLAGS] --job ID | --tree TREE | --tenant", "erase files by job, tree or tenant", long, 0,
		func(fs *flag.FlagSet) {
			job = fs.String("job", "", "erase the files this job stored")
			tenant = fs.Bool("tenant", false, "erase every file of the local tenant")
		},
		func(ctx context.Context, env *Env, c storeCall) error {
			e := files.Erasure{Tenant: localTenant, Job: *job, By: "user-" + strconv.Itoa(os.Getuid())}
			if c.treeGiven {
				e.Tree = c.sc.Tree
			}
			if n := btoi(*job != "") + btoi(c.treeGiven) + btoi(*tenant); n != 1 {
				return usagef("name exactly one of --job, --tree or --tenant (see --help)")
			}
			removed, err := c.st.Erase(ctx, e)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(env.Stdout, "%d files erased\n", removed)
			return err
		})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func filesHoldCmd() *Command {
	const long = "Places a legal hold NAME on the tree (--tree; with --tenant on every tree of\nthe local tenant): its files outlive retention and cannot be erased until the\nhold is released.\n\n" + storeHelp
	var release, reason *string
	var list, tenant, asJSON *bool
	return storeCmd("hold", "[FLAGS] NAME | --release NAME | --list", "place, release or list legal holds", long, -1,
		func(fs *flag.FlagSet) {
			release = fs.String("release", "", "release the hold NAME")
			list = fs.Bool("list", false, "list the holds")
			tenant = fs.Bool("tenant", false, "hold every tree of the local tenant")
			reason = fs.String("reason", "", "why the files are held")
			asJSON = fs.Bool("json", false, "with --list, print JSON")
		},
		func(ctx context.Context, env *Env, c storeCall) error {
			switch {
			case *list && *release == "" && len(c.pos) == 0:
				hs, err := c.st.Holds(ctx, localTenant)
				if err != nil {
					return err
				}
				if *asJSON {
					if hs == nil {
						hs = []files.Hold{}
					}
					return json.NewEncoder(env.Stdout).Encode(hs)
				}
				for _, h := range hs {
					tree := h.Tree
					if tree == "" {
						tree = "(every tree)"
					}
					fmt.Fprintf(env.Stdout, "%s\t%s\t%s\t%s\n", h.Name, tree, h.Created.Format(time.DateTime), h.Reason)
				}
				return nil
			case *release != "" && !*list && len(c.pos) == 0:
				return c.st.ReleaseHold(ctx, localTenant, *release)
			case len(c.pos) == 1 && !*list && *release == "":
				tree := c.sc.Tree
				if *tenant {
					tree = ""
				}
				return c.st.PlaceHold(ctx, localTenant, c.pos[0], tree, *reason)
			}
			return usagef("give a NAME to place, --release NAME or --list (see --help)")
		})
}

func filesCheckCmd() *Command {
	const long = "Reads every file of the store and checks it against its digest.\n\n" + storeHelp
	return storeCmd("check", "[FLAGS]", "verify every file against its digest", long, 0, nil,
		func(ctx context.Context, env *Env, c storeCall) error {
			n, probs, err := c.st.Verify(ctx)
			if err != nil {
				return err
			}
			for _, p := range probs {
				fmt.Fprintf(env.Stdout, "%s\t%s\t%s\n", p.Tenant, p.Ref, p.What)
			}
			fmt.Fprintf(env.Stdout, "%d files checked, %d damaged\n", n, len(probs))
			if len(probs) > 0 {
				return errs.New(errs.Internal, "%d damaged files (store their content again to repair them)", len(probs))
			}
			return nil
		})
}

func filesHandCmd() *Command {
	const long = "Hands the files REF... that the tree (--tree) may read to the job tree --to, so\na job started there (airlock run, a tool call) reads them. Files the tree may\nnot read are left out. The hand-over is recorded as a job.files_handed event.\n\n" + storeHelp
	var to *string
	return storeCmd("hand", "[FLAGS] --to TREE REF...", "hand files to another job tree", long, -1,
		func(fs *flag.FlagSet) { to = fs.String("to", "", "the job tree to hand the files to") },
		func(ctx context.Context, env *Env, c storeCall) error {
			if *to == "" || len(c.pos) == 0 {
				return usagef("name --to TREE and at least one REF (see --help)")
			}
			refs := make([]files.Ref, 0, len(c.pos))
			for _, p := range c.pos {
				r, err := files.ParseRef(p)
				if err != nil {
					return badValue(err, "")
				}
				refs = append(refs, r)
			}
			handed, err := c.st.Hand(ctx, c.sc, *to, refs, "user-"+strconv.Itoa(os.Getuid()))
			if err != nil {
				return err
			}
			for _, r := range handed {
				fmt.Fprintln(env.Stdout, r)
			}
			if left := len(refs) - len(handed); left > 0 {
				return errs.NotFoundf("%d of the files are not ones this tree may read; they were not handed", left)
			}
			return nil
		})
}
