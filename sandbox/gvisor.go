package sandbox

// gvisorInstall is the fix every refusal of runsc names.
const gvisorInstall = "run `bash scripts/setup.sh`, which builds runsc static from the Go module proxy into .airlock-ci/bin (CGO_ENABLED=0 go install gvisor.dev/gvisor/runsc@v0.0.0-20260701204157-69c2d17aea96), and put it on PATH"

// RunscReport is what was found of gVisor's runsc, read from the binary
// without running it. SelfTest is filled by `airlock sandbox check`, which
// starts a real tier-2 box.
type RunscReport struct {
	Path string `json:"path,omitempty"`
	// Version is the module version or release runsc was built from.
	Version string `json:"version,omitempty"`
	// Date is the build's date, YYYYMMDD, "" when unknown.
	Date string `json:"date,omitempty"`
	// Static reports that the binary has no ELF interpreter: a cgo
	// (dynamically linked) runsc dies at start.
	Static bool `json:"static"`
	// Usable is set when nothing read from the binary rules it out.
	Usable bool   `json:"usable"`
	Why    string `json:"why,omitempty"`
	Fix    string `json:"fix,omitempty"`
	// Platform is the gVisor platform airlock starts it on.
	Platform string `json:"platform,omitempty"`
	// SelfTest is the result of starting a box (`sandbox check` only):
	// "" not run, "ok", or why it failed.
	SelfTest string `json:"self_test,omitempty"`
}

// SetGVisorSelfTest records the result of starting a real tier-2 box
// (`airlock sandbox check`; err nil when it passed): tier 2 is reported
// only when it passed. auto never picks it (see Resolve).
func (r *Report) SetGVisorSelfTest(err error) {
	if err != nil {
		r.Runsc.SelfTest = err.Error()
		r.Runsc.Usable = false
		r.Runsc.Why = "a gVisor box failed its self-test: " + err.Error()
		r.Runsc.Fix = gvisorSelfTestFix
		r.Findings = append(r.Findings, Finding{Severity: SevWarn, Topic: "gvisor",
			Text: "runsc at " + r.Runsc.Path + " passed every check but a real gVisor box failed its self-test: " + err.Error() + "; --sandbox 2 is refused.",
			Fix:  gvisorSelfTestFix})
		return
	}
	r.Runsc.SelfTest = "ok"
	if r.Best == Tier1 {
		r.Best = Tier2
		r.Why += "; gVisor " + r.Runsc.Version + " (" + r.Runsc.Platform + ") passed its self-test (tier 2 on request: --sandbox 2 or isolation: gvisor)"
	}
}

// gvisorSelfTestFix is the fix of a runsc that starts no box.
const gvisorSelfTestFix = "Run `airlock sandbox check --json` and read runsc's message; rebuild runsc with `bash scripts/setup.sh` (static, systrap), and never point it at KVM without a working /dev/kvm."

// gvisorFloor is the oldest runsc airlock accepts, as YYYYMMDD: the build
// airlock is tested with (scripts/setup.sh). Older ones fail in ordinary
// use — Debian's 2022 package answers statx(AT_NO_AUTOMOUNT) with EINVAL,
// so `ls -l` fails inside the box.
const gvisorFloor = "20260701"

// judgeRunsc decides from what was read whether runsc may run boxes.
func judgeRunsc(r RunscReport) RunscReport {
	r.Usable = false
	switch {
	case !r.Static:
		r.Why, r.Fix = "runsc at "+r.Path+" is dynamically linked (built with cgo), and such a runsc dies at start (its umounter re-executes /proc/self/exe)", "rebuild it with CGO_ENABLED=0: "+gvisorInstall
	case r.Date == "":
		r.Why, r.Fix = "runsc at "+r.Path+" carries no build date airlock recognises (version "+orNone(r.Version)+")", gvisorInstall
	case r.Date < gvisorFloor:
		r.Why, r.Fix = "runsc at "+r.Path+" was built on "+r.Date+", older than "+gvisorFloor+", the oldest airlock accepts (older releases fail ordinary calls: statx with AT_NO_AUTOMOUNT)", gvisorInstall
	default:
		r.Usable = true
	}
	return r
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
