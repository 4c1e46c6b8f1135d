package sandbox

// Report is what the host can do, as `airlock sandbox check` shows it. It is
// plain data and marshals to JSON.
type Report struct {
	// Best is the highest tier the host gives; see Tier.
	Best Tier `json:"tier"`
	// Why says in one line why that is the tier.
	Why        string        `json:"why"`
	OS         string        `json:"os"`
	Kernel     string        `json:"kernel,omitempty"`
	Bubblewrap BwrapReport   `json:"bubblewrap"`
	UserNS     UserNSReport  `json:"user_namespaces"`
	Seccomp    SeccompReport `json:"seccomp"`
	Cgroup     CgroupReport  `json:"cgroup"`
	Yama       YamaReport    `json:"yama"`
	// Landlock is the kernel's Landlock ABI, which holds the exec allowlist.
	Landlock LandlockReport `json:"landlock"`
	// Protected reports whether protected paths are enforced on this host.
	Protected bool `json:"protected_paths"`
	// GVisor is the path of runsc, "" when absent.
	GVisor string `json:"gvisor,omitempty"`
	// KVM reports whether /dev/kvm exists.
	KVM      bool      `json:"kvm"`
	Findings []Finding `json:"findings"`
}

// Tier is the highest tier the host gives.
func (r Report) Tier() Tier { return r.Best }

// Severities of a Finding.
const (
	SevInfo  = "info"  // worth knowing; nothing is weaker for it
	SevWarn  = "warn"  // something is weaker or refused; the fix restores it
	SevError = "error" // a tier is unavailable until fixed
)

// Finding is one observation with its fix.
type Finding struct {
	Severity string `json:"severity"`
	Topic    string `json:"topic"`
	Text     string `json:"text"`
	Fix      string `json:"fix"`
}

// BwrapReport is what was found of bubblewrap.
type BwrapReport struct {
	Path          string `json:"path,omitempty"`
	Version       string `json:"version,omitempty"`
	BindFD        bool   `json:"bind_fd"`
	DisableUserns bool   `json:"disable_userns"`
	ClearEnv      bool   `json:"clearenv"`
	Setuid        bool   `json:"setuid"`
	Err           string `json:"error,omitempty"`
}

// UserNSReport is whether bubblewrap can create a user namespace.
type UserNSReport struct {
	Available         bool   `json:"available"`
	MaxUserNamespaces int    `json:"max_user_namespaces"`
	UnprivilegedClone *int   `json:"unprivileged_userns_clone,omitempty"`
	AppArmorRestrict  *int   `json:"apparmor_restrict_unprivileged_userns,omitempty"`
	Why               string `json:"why,omitempty"`
	Fix               string `json:"fix,omitempty"`
}

// SeccompReport is whether seccomp filters are available.
type SeccompReport struct {
	Available bool     `json:"available"`
	Why       string   `json:"why,omitempty"`
	Actions   []string `json:"actions,omitempty"`
}

// CgroupReport is the cgroup hierarchy limits go through.
type CgroupReport struct {
	Version     int      `json:"version"` // 0 none, 1, 2
	Root        string   `json:"root,omitempty"`
	Controllers []string `json:"controllers,omitempty"`
	Missing     []string `json:"missing,omitempty"`
	Writable    bool     `json:"writable"`
	Fix         string   `json:"fix,omitempty"`
}

// YamaReport is the Yama LSM's ptrace scope.
type YamaReport struct {
	Present     bool `json:"present"`
	PtraceScope int  `json:"ptrace_scope"`
}

// LandlockReport is the kernel's Landlock support.
type LandlockReport struct {
	// ABI is the version landlock_create_ruleset reports; 0 is none.
	ABI int    `json:"abi"`
	Err string `json:"error,omitempty"`
}
