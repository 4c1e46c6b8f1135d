package shellread

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCanonEquivalentSpellings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		prog  string
		forms []string // argument strings that must all canonicalise alike
		want  []string
	}{
		{"rm recursive force", "rm", []string{"-rf x", "-fr x", "-r -f x", "-f -r x", "--recursive --force x",
			"--force --recursive x", "-R -f x", "x -rf", "--recur --for x", "-rfr x"}, []string{"-f", "-r", "x"}},
		{"rm operand starting with a dash", "rm", []string{"-f -- -x", "--force -- -x"}, []string{"-f", "--", "-x"}},
		{"rm options after -- are operands", "rm", []string{"-- -x -f"}, []string{"--", "-x", "-f"}},
		{"rm preserve root", "rm", []string{"-rf --no-preserve-root /", "--no-preserve-root -fR /"},
			[]string{"--no-preserve-root", "-f", "-r", "/"}},
		{"cp", "cp", []string{"-a -t dir x", "--archive --target-directory=dir x", "-at dir x", "-atdir x"},
			[]string{"-a", "-t=dir", "x"}},
		{"mv", "mv", []string{"-f --suffix=.bak a b", "-fS .bak a b", "--force -S.bak a b"}, []string{"-S=.bak", "-f", "a", "b"}},
		{"chmod", "chmod", []string{"-R 755 d", "--recursive 755 d", "755 d -R"}, []string{"-R", "755", "d"}},
		{"chmod mode that looks like an option", "chmod", []string{"-w f", "-- -w f"}, []string{"--", "-w", "f"}},
		{"chmod rwx mode", "chmod", []string{"-R -rwx d"}, []string{"-R", "--", "-rwx", "d"}},
		{"chown", "chown", []string{"-Rh u:g d", "--recursive --no-dereference u:g d"}, []string{"-R", "-h", "u:g", "d"}},
		{"git push force", "git", []string{"push --force origin main", "push -f origin main", "push origin main --force",
			"push origin -f main"}, []string{"push", "-f", "origin", "main"}},
		{"git global options", "git", []string{"-c a=b -C dir push -d origin x", "-C dir -c a=b push --delete origin x"},
			[]string{"-C=dir", "-c=a=b", "push", "-d", "origin", "x"}},
		{"git commit message", "git", []string{"commit -am msg", "commit -a -m msg", "commit --all --message=msg",
			"commit --all --message msg", "commit -a -mmsg", "commit -a -m=msg"}, []string{"commit", "-a", "-m=msg"}},
		{"git clean", "git", []string{"clean -fdx", "clean -x -d --force"}, []string{"clean", "-d", "-f", "-x"}},
		{"git unknown subcommand", "git", []string{"log -ps x"}, []string{"log", "-p", "-s", "x"}},
		{"curl", "curl", []string{"-fsSL -o out https://x", "--fail --silent --show-error --location --output out https://x",
			"https://x -Lo out -fsS", "-fsSLoout https://x"}, []string{"-L", "-S", "-f", "-o=out", "-s", "https://x"}},
		{"curl header values kept", "curl", []string{"-H a -H b u", "--header=a --header b u"}, []string{"-H=a", "-H=b", "u"}},
		{"wget", "wget", []string{"-qO- https://x", "-q -O - https://x", "--quiet --output-document=- https://x"},
			[]string{"-O=-", "-q", "https://x"}},
		{"tar old style", "tar", []string{"xzf a.tgz", "-xzf a.tgz", "-x -z -f a.tgz", "--extract --gzip --file=a.tgz",
			"--file a.tgz -xz"}, []string{"-f=a.tgz", "-x", "-z"}},
		{"tar directory", "tar", []string{"-C /tmp -xf a.tar", "xfC a.tar /tmp", "--directory=/tmp -xf a.tar"},
			[]string{"-C=/tmp", "-f=a.tar", "-x"}},
		{"sed in place", "sed", []string{"-i s/a/b/ f", "--in-place s/a/b/ f", "s/a/b/ -i f"}, []string{"-i", "s/a/b/", "f"}},
		{"sed in place suffix", "sed", []string{"-i.bak -e s/a/b/ f", "--in-place=.bak --expression=s/a/b/ f",
			"-es/a/b/ -i.bak f"}, []string{"-e=s/a/b/", "-i=.bak", "f"}},
		{"sed -ni is -n -i", "sed", []string{"-ni p f", "-n -i p f"}, []string{"-i", "-n", "p", "f"}},
		{"dd operands sorted", "dd", []string{"if=/dev/zero of=/dev/sda bs=1M", "of=/dev/sda bs=1M if=/dev/zero"},
			[]string{"bs=1M", "if=/dev/zero", "of=/dev/sda"}},
		{"find unchanged", "find", []string{"/ -name x -delete"}, []string{"/", "-name", "x", "-delete"}},
		{"path-qualified program", "/usr/bin/rm", []string{"-rf x", "--recursive --force x"}, []string{"-f", "-r", "x"}},
		{"unknown program splits letter clusters in place", "ls", []string{"-la x", "-al x"}, []string{"-a", "-l", "x"}},
		{"unknown program keeps values", "tail", []string{"-n5 f"}, []string{"-n5", "f"}},
		{"globs pass through", "rm", []string{"-rf *"}, []string{"-f", "-r", "*"}},
		{"glob in a value", "curl", []string{"--output=* u", "-o * u"}, []string{"-o=*", "u"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range tc.forms {
				got := Canon(tc.prog, strings.Fields(f))
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Canon(%q, %q) (-want +got):\n%s", tc.prog, f, diff)
				}
			}
		})
	}
}

func TestCanonDistinguishes(t *testing.T) {
	// Spellings that mean different things must stay different.
	for _, tc := range []struct {
		name, prog, a, b string
	}{
		{"rm operand vs option", "rm", "-- -f", "-f"},
		{"sed -in is a suffix", "sed", "-in p f", "-n -i p f"},
		{"git global vs subcommand option", "git", "-p log", "log -p"},
		{"curl output values", "curl", "-o a u", "-o b u"},
		{"operand order", "mv", "a b", "b a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ga, gb := Canon(tc.prog, strings.Fields(tc.a)), Canon(tc.prog, strings.Fields(tc.b))
			if cmp.Equal(ga, gb) {
				t.Errorf("Canon(%q, %q) and Canon(%q, %q): both got %q, want them to differ", tc.prog, tc.a, tc.prog, tc.b, ga)
			}
		})
	}
}

func TestCanonIdempotent(t *testing.T) {
	for _, tc := range []struct{ prog, args string }{
		{"rm", "-rf --no-preserve-root x -- -y"}, {"git", "-c a=b push --force-with-lease=main origin +main"},
		{"curl", "-fsSL -H x:y -d @f u"}, {"tar", "xzf a.tgz -C d"}, {"sed", "-i.bak -e p f"}, {"chmod", "-R -w d"},
	} {
		once := Canon(tc.prog, strings.Fields(tc.args))
		twice := Canon(tc.prog, once)
		if diff := cmp.Diff(once, twice); diff != "" {
			t.Errorf("Canon(%q, %q) is not stable when applied again (-once +twice):\n%s", tc.prog, tc.args, diff)
		}
	}
}

func TestAppendCanonAllocations(t *testing.T) {
	args := []string{"--recursive", "-f", "build"}
	var buf [16]string
	n := testing.AllocsPerRun(100, func() { AppendCanon(buf[:0], "rm", args) })
	if n != 0 {
		t.Errorf("AppendCanon(rm --recursive -f build) allocates %v times, want 0", n)
	}
	st := []string{"status", "-s"}
	if n := testing.AllocsPerRun(100, func() { AppendCanon(buf[:0], "git", st) }); n != 0 {
		t.Errorf("AppendCanon(git status -s) allocates %v times, want 0", n)
	}
}

func TestSpellings(t *testing.T) {
	for _, tc := range []struct {
		prog, sub, opt string
		want           []string
	}{
		{"git", "push", "-f", []string{"-f", "--force"}},
		{"git", "push", "--force-with-lease=x", []string{"--force-with-lease=x"}},
		{"git", "", "-P", []string{"-P", "--no-pager"}},
		{"curl", "", "-o=out", []string{"-o=out", "--output=out"}},
		{"rm", "", "-r", []string{"-r", "--recursive", "-R"}},
		{"sed", "", "-n", []string{"-n", "--quiet", "--silent"}},
		{"ls", "", "-l", []string{"-l"}},
		{"rm", "", "x", []string{"x"}},
	} {
		got := Spellings(tc.prog, tc.sub, tc.opt)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Spellings(%q, %q, %q) (-want +got):\n%s", tc.prog, tc.sub, tc.opt, diff)
		}
	}
}
