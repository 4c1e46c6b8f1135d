package warmrun

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-run/airlock/approvals"
	"github.com/airlock-run/airlock/internal/warmhand"
)

// TestDecodeReplyReadsEncode: every reply the server writes reads back
// the same through the client's decoder, and what the server never writes
// is refused.
func TestDecodeReplyReadsEncode(t *testing.T) {
	for _, r := range []reply{
		{Answer: answerAccepted},
		{Answer: answerExit, Code: 3},
		{Answer: answerExit, Code: -1},
		{Answer: answerExit},
		{Answer: answerChallenge, Fd: 23},
		{Answer: answerCold, Reason: `a "quoted" \ path/with/slashes <&> tab	nl` + "\n\x01\x7f é ✓ 🚀 \u2028\u2029"},
		{Answer: answerCold, Reason: "invalid \xff utf-8"},
		{Answer: answerRefused, Reason: strings.Repeat("\x00\"", maxReason)},
	} {
		b := encodeReply(r)
		got, err := warmhand.DecodeReply(b)
		want := r
		if len(want.Reason) > maxReason {
			want.Reason = want.Reason[:maxReason] + "…"
		}
		want.Reason = strings.ToValidUTF8(want.Reason, "\ufffd")
		if err != nil || got != want {
			t.Errorf("%s: got %+v, %v; want %+v", b, got, err, want)
		}
	}
	for _, bad := range []string{``, `{`, `{"answer":"x"`, `{"answer":"x"} x`, `{"answer":1}`, `{"code":"1"}`, `{"code":1.5}`,
		`{"code":01}`, `{"other":"x"}`, `{"answer":"a` + "\n" + `"}`, `{"answer":"\x"}`, `{"answer":"\u12"}`, `["answer"]`, `{"answer":"x",}`} {
		if r, err := warmhand.DecodeReply([]byte(bad)); err == nil {
			t.Errorf("%q: read as %+v, want refused", bad, r)
		}
	}
	if r, err := warmhand.DecodeReply([]byte(" {\"answer\" : \"cold\" , \"reason\":\"\\ud83d\\ude80\\ud800x\"}\n")); err != nil || r.Reason != "🚀\ufffdx" {
		t.Errorf("spaces and surrogates: got %+v, %v", r, err)
	}
}

// TestClientDirChecksAreApprovals: the client's checks of the socket's
// directory say what approvals.CheckDir("warm", dir) says, and its
// default directory is approvals'.
func TestClientDirChecksAreApprovals(t *testing.T) {
	base := t.TempDir()
	good := filepath.Join(base, "good")
	open := filepath.Join(base, "open")
	file := filepath.Join(base, "file")
	link := filepath.Join(base, "link")
	os.Mkdir(good, 0o700)
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o755)
	os.WriteFile(file, nil, 0o600)
	os.Symlink(good, link)
	for _, dir := range []string{good, open, file, link, filepath.Join(base, "missing")} {
		want, got := approvals.CheckDir("warm", dir), warmhand.CheckDir(dir)
		if (want == nil) != (got == nil) || (got != nil && got.Error() != want.Error()) {
			t.Errorf("%s: got %v, want %v", dir, got, want)
		}
	}
	if dir := filepath.Join(base, "missing"); !errors.Is(warmhand.CheckDir(dir), fs.ErrNotExist) {
		t.Errorf("a missing directory: got %v, want one that is not there", warmhand.CheckDir(dir))
	}
	for _, xdg := range []string{"", "relative", "/run/user/1000", "/run/user/1000/", "/a/../b//c"} {
		env := func(k string) string {
			if k == "XDG_RUNTIME_DIR" {
				return xdg
			}
			return ""
		}
		if got, want := warmhand.DefaultSocketDir(env), approvals.DefaultSocketDir(env); got != want {
			t.Errorf("XDG_RUNTIME_DIR=%q: got %s, want %s", xdg, got, want)
		}
	}
}
