package shellread

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A string the reader cannot finish within its bounds is refused: too
// large, nested too deeply, too many commands, or out of time.
func TestReadBounds(t *testing.T) {
	cases := []struct{ name, src string }{
		{"size", strings.Repeat("a", MaxSource+1)},
		{"nesting", strings.Repeat("(", 900) + "ls" + strings.Repeat(")", 900)},
		{"commands", strings.Repeat("ls;", MaxCommands+1)},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range []Dialect{Bash, POSIX} {
				if _, err := ReadIn(tt.src, d); !errors.Is(err, ErrTooLarge) {
					t.Errorf("%s: got %v, want %v", d, err, ErrTooLarge)
				}
			}
		})
	}
	t.Run("time", func(t *testing.T) {
		f, err := parse("ls; ls; ls", POSIX)
		if err != nil {
			t.Fatal(err)
		}
		r := &reader{deadline: time.Now().Add(-time.Second)}
		r.stmts(f.Stmts, scope{src: "ls; ls; ls", parent: -1, shell: newShell(), dialect: POSIX})
		if !errors.Is(r.err, ErrTooLarge) {
			t.Errorf("past the deadline: got %v, want %v", r.err, ErrTooLarge)
		}
	})
}

// Each dialect refuses what its shell runs differently than it reads.
func TestReadDialects(t *testing.T) {
	cases := []struct {
		name, src string
		bash      bool // Bash reads it
		posix     bool // POSIX reads it
	}{
		{"dollar quote", `echo $'\';rm -f victim;#'`, true, true},
		{"and-greater", "true &>/dev/null rm x", true, false},
		{"double paren", "((rm -f *victim))", true, true},
		{"test clause", "[[ a > b ]]", true, true},
		{"heredoc dollar delimiter", "cat <<$'E'\n$E\nrm x\nE\n", false, false},
		{"heredoc end paren", "echo $(cat <<EOF\nx\nEOF)\nrm x\nEOF\n)", false, false},
		{"heredoc plain", "cat <<'EOF'\nx\nEOF\n", true, true},
		{"declare", "declare x=1", true, true},
		{"local", "f() { local x=1; }", true, true},
		{"pipe all", "ls |& cat", true, false},
		{"proc subst", "cat <(ls)", true, false},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []struct {
				d    Dialect
				want bool
			}{{Bash, tt.bash}, {POSIX, tt.posix}} {
				_, err := ReadIn(tt.src, k.d)
				if (err == nil) != k.want {
					t.Errorf("%s: %q: got error %v, want read=%v", k.d, tt.src, err, k.want)
				}
			}
		})
	}
	// What each reads: dash runs rm in these, bash does not; dash writes b.
	cmds, err := ReadIn("((rm -f *victim))", POSIX)
	if err != nil || find(cmds, "rm -f *victim") == nil {
		t.Errorf("POSIX: ((…)): got %v %v, want rm -f *victim among the commands", argvsOf(cmds), err)
	}
	cmds, err = ReadIn("[[ a > b ]]", POSIX)
	if err != nil || len(cmds) != 1 || len(cmds[0].Redirects) != 1 || !cmds[0].Redirects[0].Write || cmds[0].Redirects[0].Path != "b" {
		t.Errorf("POSIX: [[ a > b ]]: got %+v %v, want the program [[ writing b", cmds, err)
	}
	cmds, err = ReadIn(`echo $'\';rm -f victim;#'`, POSIX)
	if err != nil || find(cmds, "rm -f victim") == nil {
		t.Errorf("POSIX: got %v %v, want rm -f victim among the commands", argvsOf(cmds), err)
	}
	cmds, err = ReadIn(`echo $'\';rm -f victim;#'`, Bash)
	if err != nil || find(cmds, "rm -f victim") != nil {
		t.Errorf("Bash: got %v %v, want no rm", argvsOf(cmds), err)
	}
}

func argvsOf(cmds []Command) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, joined(c))
	}
	return out
}
