package sandbox

import (
	"reflect"
	"testing"
)

func TestParseGitConfig(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // name=value
		bad  bool
	}{
		{"include", "[include]\n\tpath = ../.gitconfig\n", []string{"include.path=../.gitconfig"}, false},
		{"includeIf keeps the condition", "[includeIf \"gitdir:~/w/\"]\n path = \"x y\" ; c\n", []string{"includeif.gitdir:~/w/.path=x y"}, false},
		{"keys fold, values do not", "[Core]\nHooksPath=.Husky\n", []string{"core.hookspath=.Husky"}, false},
		{"old subsection", "[remote.Origin]\nurl = u\n", []string{"remote.origin.url=u"}, false},
		{"bare key is true", "[core]\n\tbare\n", []string{"core.bare=true"}, false},
		{"continuation", "[core]\nfsmonitor = a\\\nb\n", []string{"core.fsmonitor=ab"}, false},
		{"escapes and comments", "# c\n[a]\nb = \"x\\\"#y\" # z\n", []string{"a.b=x\"#y"}, false},
		{"two variables on two lines", "[a]\nb=1\nc=2\n", []string{"a.b=1", "a.c=2"}, false},
		{"unterminated quote", "[a]\nb = \"x\n", nil, true},
		{"outside a section", "b = 1\n", nil, true},
		{"bad header", "[a \"b]\n", nil, true},
		{"bad escape", "[a]\nb = \\q\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars, err := parseGitConfig(tt.in)
			if (err != nil) != tt.bad {
				t.Fatalf("error = %v, want error %v", err, tt.bad)
			}
			var got []string
			for _, v := range vars {
				got = append(got, v.name()+"="+v.value)
			}
			if !tt.bad && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzParseGitConfig: any input is read or refused, never a panic, and a
// read one names only sections git could write.
func FuzzParseGitConfig(f *testing.F) {
	for _, s := range []string{"[a]\nb=c\n", "[include]\npath = \"x\\\"y\"\n", "[a \"b\"]\n\tc\n", "[a.b]\nc = d \\\n e\n", "\ufeff[a]\r\nb=1\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		vars, err := parseGitConfig(in)
		if err != nil {
			return
		}
		for _, v := range vars {
			if checkGitSection(v.section) != nil || v.key == "" {
				t.Fatalf("read %q from %q", v.name(), in)
			}
		}
	})
}
