package seccomp

import (
	"strings"
	"testing"
)

// TestInstallCodeRefusesWhatIsNoFilter: code that is not whole
// instructions, none or more than the kernel takes is refused before
// anything is loaded (this test process stays unfiltered).
func TestInstallCodeRefusesWhatIsNoFilter(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
	}{
		{"none", nil},
		{"a part of an instruction", make([]byte, 7)},
		{"more than the kernel takes", make([]byte, 8*(maxInstructions+1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := InstallCode(tc.code)
			if err == nil || !strings.Contains(err.Error(), "not a filter") {
				t.Fatalf("InstallCode(%d bytes) = %v, want a refusal", len(tc.code), err)
			}
		})
	}
}
