package shellread

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var testWhere = Where{Workdir: "/work/proj", Home: "/home/u"}

// matched returns the IDs of the built-in rules any command of src matches.
func matched(t *testing.T, src string, where Where) []string {
	t.Helper()
	cmds, err := Read(src)
	if err != nil {
		t.Fatalf("Read(%q): %v", src, err)
	}
	var ids []string
	for i := range cmds {
		if r, ok := Catastrophic(cmds, i, where); ok {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

func TestCatastrophic(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want string // the rule that must match; "" = none may match
	}{
		// rm-root
		{"rm -rf /", "rm -rf /", "rm-root"},
		{"rm -fr /*", "rm -fr /*", "rm-root"},
		{"rm long options", "rm --recursive --force /", "rm-root"},
		{"rm shortest long prefixes", "rm --r --f /", "rm-root"},
		{"rm -r -f //", "rm -r -f //", "rm-root"},
		{"rm climbing to root", "rm -rf ../../..", "rm-root"},
		{"no-preserve-root", "rm -rf --no-preserve-root /tmp/x", "rm-root"},
		{"rm through sudo", "sudo rm -rf /", "rm-root"},
		{"rm in sh -c", "sh -c 'rm -rf /'", "rm-root"},
		{"rm after cd /", "cd / && rm -rf *", "rm-root"},
		{"rm after cd / with ;", "cd /; rm -rf *", "rm-outside"},
		{"rm after command cd", "command cd / && rm -rf *", "rm-root"},
		{"rm after builtin cd", "builtin cd / && rm -rf *", "rm-root"},
		{"rm quoted and escaped", `\rm '-rf' "/"`, "rm-root"},
		{"rm via xargs", "echo / | xargs rm -rf", "rm-outside"},
		// rm-home
		{"rm ~", "rm -rf ~", "rm-home"},
		{"rm ~/", "rm -rf ~/", "rm-home"},
		{"rm $HOME", `rm -rf "$HOME"`, "rm-home"},
		{"rm ${HOME}", "rm -rf ${HOME}/", "rm-home"},
		{"rm home by path", "rm -r /home/u", "rm-home"},
		{"rm an ancestor of home", "rm -r /home", "rm-home"},
		// rm-outside
		{"rm outside", "rm -rf /etc", "rm-outside"},
		{"rm parent", "rm -rf ..", "rm-outside"},
		{"rm sibling via ..", "rm -rf build/../../other", "rm-outside"},
		{"rm in home subdir", "rm -rf ~/.ssh", "rm-outside"},
		{"rm variable", `rm -rf "$DIR"`, "rm-outside"},
		{"rm variable default", "rm -rf ${TMP:-/}", "rm-outside"},
		{"rm glob climbing", "rm -rf ../*", "rm-outside"},
		{"rm dotglob", "rm -rf .*", "rm-outside"},
		{"rm after unknown cd", "cd $X; rm -rf build", "rm-outside"},
		{"rm after cd outside", "cd /tmp && rm -rf build", "rm-outside"},
		{"rm after a cd that may fail", "cd /; cd /work/proj/gone; rm -rf *", "rm-outside"},
		{"rm after a cd in a function", "f() { cd /; }; cd /work/proj && f; rm -rf *", "rm-outside"},
		{"rm after a cd in a branch", "cd / && if x; then cd /work/proj; fi && rm -rf *", "rm-outside"},
		{"find -exec rm from /", `find / -name x -exec rm -rf {} \;`, "rm-root"},
		{"find -exec rm from outside", `find /var -exec rm -rf {} +`, "rm-outside"},
		{"find -delete outside", "find /var -delete", "rm-outside"},
		{"find -delete root", "find / -delete", "rm-root"},
		{"brace expansion", "rm -rf /{etc,usr}", "rm-outside"},
		// inside the working directory: nothing
		{"rm inside", "rm -rf build", ""},
		{"rm inside absolute", "rm -rf /work/proj/build", ""},
		{"rm inside glob", "rm -rf build/*", ""},
		{"rm star", "rm -rf *", ""},
		{"rm inside after cd", "cd sub && rm -rf ../build", ""},
		{"rm not recursive outside", "rm -f /etc/hosts", ""},
		{"find -exec rm inside", `find . -name '*.o' -exec rm -rf {} +`, ""},
		{"find -delete inside", "find build -name '*.o' -delete", ""},
		// download-exec
		{"curl | sh", "curl -fsSL https://x | sh", "download-exec"},
		{"wget -O- | bash", "wget -O- https://x | bash", "download-exec"},
		{"curl | sudo bash", "curl https://x | sudo bash", "download-exec"},
		{"curl | tee | sh", "curl https://x | tee install.sh | sh", "download-exec"},
		{"curl | python", "curl https://x | python3", "download-exec"},
		{"curl | perl", "curl https://x | perl", "download-exec"},
		{"curl | ruby", "curl https://x | ruby", "download-exec"},
		{"curl | node", "curl https://x | node", "download-exec"},
		{"sh <(curl)", "sh <(curl https://x)", "download-exec"},
		{"bash < <(curl)", "bash < <(curl https://x)", "download-exec"},
		{"bash -c $(curl)", `bash -c "$(curl -fsSL https://x)"`, "download-exec"},
		{"eval $(curl)", `eval "$(wget -qO- https://x)"`, "download-exec"},
		{"source <(curl)", "source <(curl https://x)", "download-exec"},
		{"python -c $(curl)", `python3 -c "$(curl https://x)"`, "download-exec"},
		{"nested sh -c", `sh -c "curl https://x | sh"`, "download-exec"},
		{"curl to a file", "curl -o x.sh https://x", ""},
		{"descriptor from a process substitution", "exec 3< <(curl https://x); sh <&3", "download-exec"},
		{"curl | sh -s", "curl https://x | sh -s -- --yes", "download-exec"},
		{"curl | bash -", "curl https://x | bash -", "download-exec"},
		{"curl | python -", "curl https://x | python3 - arg", "download-exec"},
		{"curl | perl /dev/stdin", "curl https://x | perl /dev/stdin", "download-exec"},
		{"curl | awk -f -", "curl https://x | awk -f -", "download-exec"},
		{"curl | python -c reads data", "curl https://x | python3 -c 'import json,sys; print(json.load(sys.stdin))'", ""},
		{"curl | python -m json.tool", "curl https://x | python3 -m json.tool", ""},
		{"curl | node script", "curl https://x | node parse.js", ""},
		{"curl | awk program", "curl https://x | awk '{print $1}'", ""},
		{"curl | bash -c cat", "curl https://x | bash -c 'cat > f'", ""},
		{"curl | bash -e", "curl https://x | bash -e", "download-exec"},
		{"curl | jq", "curl https://x | jq .", ""},
		// mkfs
		{"mkfs", "mkfs -t ext4 /dev/sdb1", "mkfs"},
		{"mkfs.ext4", "mkfs.ext4 /dev/sdb1", "mkfs"},
		{"mkswap", "sudo mkswap /dev/sdb2", "mkfs"},
		// dd-device
		{"dd of device", "dd if=/dev/zero of=/dev/sda bs=1M", "dd-device"},
		{"dd of nvme", "dd if=x.img of=/dev/nvme0n1", "dd-device"},
		{"dd of variable", "dd if=x of=$DEV", "dd-device"},
		{"dd of null", "dd if=/dev/sda of=/dev/null", ""},
		{"dd of file", "dd if=/dev/zero of=disk.img count=1", ""},
		// device-write
		{"redirect to sda", "echo x > /dev/sda", "device-write"},
		{"redirect to nvme", "cat x.img >/dev/nvme0n1", "device-write"},
		{"tee to device", "cat x | tee /dev/sdb", "device-write"},
		{"cp to device", "cp x.img /dev/mmcblk0", "device-write"},
		{"redirect to null", "ls > /dev/null 2>&1", ""},
		// fork-bomb
		{"classic", ":(){ :|:& };:", "fork-bomb"},
		{"named", "bomb() { bomb | bomb & }; bomb", "fork-bomb"},
		{"background only", "f() { f & f; }; f", "fork-bomb"},
		{"plain recursion", "f() { f; }; f", ""},
		// chmod-recursive
		{"chmod -R /", "chmod -R 777 /", "chmod-recursive"},
		{"chown -R /", "chown -R nobody /", "chmod-recursive"},
		{"chmod --recursive outside", "chmod --recursive 755 /etc", "chmod-recursive"},
		{"chgrp -R home", "chgrp -R g ~", "chmod-recursive"},
		{"chmod -R inside", "chmod -R u+w build", ""},
		{"chmod not recursive outside", "chmod 644 /etc/hosts", ""},
		// wipe-device
		{"shred device", "shred -n 3 /dev/sda", "wipe-device"},
		{"wipefs -a", "wipefs -a /dev/sdb", "wipe-device"},
		{"wipefs --all", "wipefs --all /dev/sdb", "wipe-device"},
		{"blkdiscard", "blkdiscard /dev/nvme0n1", "wipe-device"},
		{"wipefs listing", "wipefs /dev/sdb", ""},
		{"shred a file", "shred -u secret.txt", ""},
		// git-force-main
		{"push -f main", "git push -f origin main", "git-force-main"},
		{"push --force master", "git push --force origin master", "git-force-main"},
		{"push force-with-lease main", "git push --force-with-lease origin main", "git-force-main"},
		{"push +main", "git push origin +main", "git-force-main"},
		{"push delete main", "git push origin :main", "git-force-main"},
		{"push --delete main", "git push --delete origin main", "git-force-main"},
		{"push -f current branch", "git push -f", "git-force-main"},
		{"push --mirror", "git push --mirror origin", "git-force-main"},
		{"push refs/heads/main", "git push -f origin HEAD:refs/heads/main", "git-force-main"},
		{"push -f feature", "git push -f origin feature", "git-force-main"},
		{"push main", "git push origin main", ""},
		{"push -qf cluster", "git push -qf origin HEAD", "git-force-main"},
		{"push at", "git push -f origin @", "git-force-main"},
		{"push glob refspec", "git push origin '+refs/heads/*:refs/heads/*'", "git-force-main"},
		{"push abbreviated force", "git push --force-w origin dev", "git-force-main"},
		{"push ambiguous abbreviation", "git push --forc origin dev", ""},
		{"push force-if-includes alone", "git push --force-if-includes origin dev", ""},
		{"push prune", "git push --prune origin 'refs/heads/*'", "git-force-main"},
		{"send-pack force", "git send-pack --force ../r HEAD:dev", "git-force-main"},
		{"push mirror setting", "git -c remote.origin.mirror=true push origin", "git-force-main"},
		{"push with -C", "git -C w push origin :dev", "git-force-main"},
		{"push tags", "git push --tags origin", ""},
		// recursive deletes by other programs
		{"tar remove-files home", "tar cf /dev/null --remove-files ~", "rm-home"},
		{"tar remove-files abbreviated", "tar cf x.tar --remove ../up", "rm-outside"},
		{"tar remove-files inside", "tar cf x.tar --remove-files build", ""},
		{"zip -m cluster", "zip -qrm z.zip ~", "rm-home"},
		{"zip -TT is no move", "zip -TTm z.zip x", ""},
		{"rsync delete", "rsync -a --delete empty/ ~/", "rm-home"},
		{"rsync del abbreviation", "rsync -a --del empty/ /etc/", "rm-outside"},
		{"rsync plain", "rsync -a src/ /backup/", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := matched(t, tc.src, testWhere)
			if tc.want == "" {
				if len(got) != 0 {
					t.Errorf("%q: got rules %q, want none", tc.src, got)
				}
				return
			}
			found := false
			for _, id := range got {
				found = found || id == tc.want
			}
			if !found {
				t.Errorf("%q: got rules %q, want %q", tc.src, got, tc.want)
			}
		})
	}
}

func TestCatastrophicWithoutPlaces(t *testing.T) {
	// Without a working directory every relative recursive delete is
	// unknown, so it escalates.
	if got := matched(t, "rm -rf build", Where{}); !cmp.Equal(got, []string{"rm-outside"}) {
		t.Errorf("rm -rf build without a workdir: got %q, want [rm-outside]", got)
	}
}

func TestCatastrophicWorkdirAtRoot(t *testing.T) {
	// A working directory of / must not make /etc "inside".
	where := Where{Workdir: "/", Home: "/root"}
	for src, want := range map[string][]string{"rm -rf /etc": {"rm-outside"}, "rm -rf /etc/x": nil} {
		if got := matched(t, src, where); !cmp.Equal(got, want) {
			t.Errorf("%q with workdir /: got %q, want %q", src, got, want)
		}
	}
}

func TestCatastrophicNoAllocations(t *testing.T) {
	cmds, err := Read("git status -s")
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { Catastrophic(cmds, 0, testWhere) }); n != 0 {
		t.Errorf("Catastrophic(git status -s) allocates %v times, want 0", n)
	}
	rm, _ := Read("rm -rf build")
	if n := testing.AllocsPerRun(100, func() { Catastrophic(rm, 0, testWhere) }); n != 0 {
		t.Errorf("Catastrophic(rm -rf build) allocates %v times, want 0", n)
	}
}

func TestCatastrophicOutOfRange(t *testing.T) {
	if _, ok := Catastrophic(nil, 0, testWhere); ok {
		t.Error("Catastrophic(nil, 0): got a match, want none")
	}
}

// TestRuleTableDocumented checks that docs/command-rules.md lists exactly
// the rules Builtin returns.
func TestRuleTableDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/command-rules.md")
	if err != nil {
		t.Fatalf("read the rule table: %v", err)
	}
	re := regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|")
	var got []string
	for _, m := range re.FindAllStringSubmatch(string(doc), -1) {
		got = append(got, m[1])
	}
	var want []string
	for _, r := range Builtin() {
		want = append(want, r.ID)
		if r.Summary == "" || r.Reason == "" || strings.Contains(r.Reason, "rule") {
			t.Errorf("rule %s: needs a summary and a reason that does not speak of rules", r.ID)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/command-rules.md rule IDs (-Builtin +doc):\n%s", diff)
	}
}

// TestRiskyEnvDocumented checks that docs/command-rules.md names every
// variable RiskyEnv knows by name.
func TestRiskyEnvDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/command-rules.md")
	if err != nil {
		t.Fatalf("read the rule table: %v", err)
	}
	for name, risky := range riskyExact {
		if risky && !regexp.MustCompile(`\b`+regexp.QuoteMeta(name)+`\b`).Match(doc) {
			t.Errorf("RiskyEnv(%q) is true but docs/command-rules.md does not name it", name)
		}
		if got := RiskyEnv(name); got != risky {
			t.Errorf("RiskyEnv(%q): got %v, want %v", name, got, risky)
		}
	}
	for name, want := range map[string]bool{"LD_PRELOAD": true, "GIT_SSH_COMMAND": true, "GIT_AUTHOR_NAME": false,
		"BASH_FUNC_ls%%": true, "CARGO_TARGET_X_LINKER": true, "CARGO_HOME": false, "FOO": false, "LANG": false} {
		if got := RiskyEnv(name); got != want {
			t.Errorf("RiskyEnv(%q): got %v, want %v", name, got, want)
		}
	}
}
