package shellread

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// What the reader reports for commands that once slipped past a policy:
// files a program writes through its arguments, awk and go running
// programs, daemons, and strings bash reads differently.
func TestReadBypassFields(t *testing.T) {
	w := func(op, p string) Redirect { return Redirect{Op: op, Path: p, Write: true, Arg: true} }
	tests := []struct {
		name       string
		src        string
		cmd        string     // the command to look at (argv joined)
		redirects  []Redirect // nil: not checked
		undecided  bool
		background bool
		err        bool
	}{
		{name: "tee", src: "echo x | tee -a airlock.yaml", cmd: "tee -a airlock.yaml", redirects: []Redirect{w("write", "airlock.yaml")}},
		{name: "tee stdout dash", src: "tee - f", cmd: "tee - f", redirects: []Redirect{w("write", "f")}},
		{name: "dd of", src: "dd if=x of=.git/hooks/pre-commit", cmd: "dd if=x of=.git/hooks/pre-commit", redirects: []Redirect{w("write", ".git/hooks/pre-commit")}},
		{name: "cp into a directory", src: "cp evil .git/hooks", cmd: "cp evil .git/hooks",
			redirects: []Redirect{w("write", ".git/hooks"), w("write", ".git/hooks/evil")}},
		{name: "cp -t", src: "cp -t .git/hooks a", cmd: "cp -t .git/hooks a",
			redirects: []Redirect{w("write", ".git/hooks"), w("write", ".git/hooks/a")}},
		{name: "cp --target prefix", src: "cp --target=d a", cmd: "cp --target=d a",
			redirects: []Redirect{w("write", "d"), w("write", "d/a")}},
		{name: "mv removes its sources", src: "mv airlock.yaml x", cmd: "mv airlock.yaml x",
			redirects: []Redirect{w("remove", "airlock.yaml"), w("remove", "x"), w("write", "x"), w("write", "x/airlock.yaml")}},
		{name: "ln one operand", src: "ln -s /tmp/airlock.yaml", cmd: "ln -s /tmp/airlock.yaml", redirects: []Redirect{w("link", "/tmp/airlock.yaml"), w("write", "airlock.yaml")}},
		{name: "ln -s reads a relative target from the link's directory", src: "ln -s ../airlock.yaml sub/x", cmd: "ln -s ../airlock.yaml sub/x",
			redirects: []Redirect{w("link", "../airlock.yaml"), w("link", "sub/../airlock.yaml"), w("link", "sub/x/../airlock.yaml"),
				w("write", "sub/x"), w("write", "sub/x/airlock.yaml")}},
		{name: "install -d", src: "install -d -m 755 a b", cmd: "install -d -m 755 a b", redirects: []Redirect{w("write", "a"), w("write", "b")}},
		{name: "rm", src: "rm -rf -- -x y", cmd: "rm -rf -- -x y", redirects: []Redirect{w("remove", "-x"), w("remove", "y")}},
		{name: "chmod skips the mode", src: "chmod +x .git/hooks/x", cmd: "chmod +x .git/hooks/x", redirects: []Redirect{w("write", ".git/hooks/x")}},
		{name: "sed -i skips the script", src: "sed -i.bak s/a/b/ f g", cmd: "sed -i.bak s/a/b/ f g", redirects: []Redirect{w("write", "f"), w("write", "g")}},
		{name: "sed without -i writes nothing", src: "sed s/a/b/ f", cmd: "sed s/a/b/ f", redirects: []Redirect{}},
		{name: "sort -o", src: "sort -o out in", cmd: "sort -o out in", redirects: []Redirect{w("write", "out")}},
		{name: "uniq output", src: "uniq in out", cmd: "uniq in out", redirects: []Redirect{w("write", "out")}},
		{name: "git --output", src: "git -C d log --output=o", cmd: "git -C d log --output=o", redirects: []Redirect{w("write", "o")}},
		{name: "glob operand", src: "rm -f *.o", cmd: "rm -f *.o", redirects: []Redirect{{Op: "remove", Path: "*.o", Write: true, Arg: true, Glob: true}}},
		{name: "dynamic operand", src: `rm -f "$x"`, cmd: `rm -f "$x"`, redirects: []Redirect{{Op: "remove", Path: `"$x"`, Write: true, Arg: true, Dynamic: true}}},
		{name: "awk system", src: `awk 'BEGIN{system("x")}'`, cmd: `awk BEGIN{system("x")}`, undecided: true},
		{name: "awk pipe", src: `awk '{print | "sh"}' f`, cmd: `awk {print | "sh"} f`, undecided: true},
		{name: "awk print redirect", src: `awk '{print > "f"}'`, cmd: `awk {print > "f"}`, undecided: true},
		{name: "awk -f", src: `awk -f p.awk f`, cmd: `awk -f p.awk f`, undecided: true},
		{name: "awk comparison", src: `awk -F: '$3 > 100 {print $1}' f`, cmd: `awk -F: $3 > 100 {print $1} f`},
		{name: "go env -w", src: "go env -w GOFLAGS=-toolexec=x", cmd: "go env -w GOFLAGS=-toolexec=x", undecided: true},
		{name: "go -toolexec reads the program", src: "go build -toolexec='x y' .", cmd: "x y"},
		{name: "setsid", src: "setsid x", cmd: "x", background: true},
		{name: "setsid -w", src: "setsid -w x", cmd: "x"},
		{name: "wget -b", src: "wget -b u", cmd: "wget -b u", background: true},
		{name: "tmux", src: "tmux new -d x", cmd: "tmux new -d x", background: true},
		{name: "systemd-run --wait", src: "systemd-run --wait x", cmd: "systemd-run --wait x"},
		{name: "at", src: "at now", cmd: "at now", background: true, undecided: true},
		{name: "carriage return", src: "git status \r# $(curl x)", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmds, err := Read(tt.src)
			if tt.err {
				if err == nil {
					t.Fatalf("Read(%q): got %d commands, want an error", tt.src, len(cmds))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var c *Command
			for i := range cmds {
				if strings.Join(cmds[i].Argv, " ") == tt.cmd {
					c = &cmds[i]
				}
			}
			if c == nil {
				t.Fatalf("no command %q in %q", tt.cmd, tt.src)
			}
			if tt.redirects != nil {
				got := c.Redirects
				if got == nil {
					got = []Redirect{}
				}
				if d := cmp.Diff(tt.redirects, got); d != "" {
					t.Errorf("redirects (-want +got):\n%s", d)
				}
			}
			if got := c.Undecidable != ""; got != tt.undecided {
				t.Errorf("undecidable: got %v (%q), want %v", got, c.Undecidable, tt.undecided)
			}
			if c.Background != tt.background {
				t.Errorf("background: got %v, want %v", c.Background, tt.background)
			}
		})
	}
}

func TestCanonPushPlus(t *testing.T) {
	for _, tt := range []struct{ args, want []string }{
		{[]string{"push", "origin", "+feature"}, []string{"push", "-f", "origin", "+feature"}},
		{[]string{"push", "-u", "origin", "+a:b"}, []string{"push", "-f", "-u", "origin", "+a:b"}},
		{[]string{"push", "-f", "origin", "+x"}, []string{"push", "-f", "origin", "+x"}},
		{[]string{"push", "origin", "feature"}, []string{"push", "origin", "feature"}},
	} {
		if got := Canon("git", tt.args); !cmp.Equal(got, tt.want) {
			t.Errorf("Canon(git, %q): got %q, want %q", tt.args, got, tt.want)
		}
	}
}
