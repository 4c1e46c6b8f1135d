package shellread

import "testing"

func TestMayStartWithDash(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want bool
	}{
		{`"$x"`, true},
		{`$x`, true},
		{`"-$x"`, true},
		{"`cmd`", true},
		{`""$x`, true},
		{`'-'$x`, true},
		{`*$x`, true},
		{`{-x,y}$z`, true},
		{`\-$x`, true},
		{``, true},
		{`"https://x-access-token:$T@127.0.0.1/r.git"`, false},
		{`https://$HOST/x`, false},
		{`'origin'$x`, false},
		{`./$x`, false},
	} {
		if got := mayStartWithDash(c.raw); got != c.want {
			t.Errorf("mayStartWithDash(%q) = %v, want %v", c.raw, got, c.want)
		}
	}
}
