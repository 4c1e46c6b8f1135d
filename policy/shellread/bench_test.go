package shellread

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

var benchScripts = map[string]string{
	"simple":   "git status",
	"chain":    "git status && go test ./... 2>&1 | tail -20",
	"wrappers": "sudo -u ci env -i PATH=/usr/bin nice -n 5 timeout 60 sh -c 'make -j4 && make test'",
	"script": "set -e\nfor f in $(git ls-files '*.go'); do\n  gofmt -l \"$f\" >> out.txt\ndone\n" +
		"if [ -s out.txt ]; then cat out.txt; exit 1; fi\nfind . -name '*.o' -exec rm -f {} +\n",
}

// BenchmarkParseOnly is the baseline: mvdan.cc/sh parsing the same strings
// without reading commands out of them. Compare BenchmarkRead against it.
func BenchmarkParseOnly(b *testing.B) {
	for name, src := range benchScripts {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p := syntax.NewParser(syntax.Variant(syntax.LangBash))
				if _, err := p.Parse(strings.NewReader(src), ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	for name, src := range benchScripts {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Read(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReadArgv(b *testing.B) {
	argv := []string{"env", "-i", "PATH=/usr/bin", "git", "-c", "core.pager=cat", "log", "-n", "5"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadArgv(argv); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendCanon(b *testing.B) {
	args := []string{"push", "--force-with-lease", "origin", "main", "-u"}
	var buf [16]string
	b.ReportAllocs()
	for b.Loop() {
		AppendCanon(buf[:0], "git", args)
	}
}

func BenchmarkCatastrophic(b *testing.B) {
	cmds, err := Read(benchScripts["script"])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range cmds {
			Catastrophic(cmds, i, testWhere)
		}
	}
}
