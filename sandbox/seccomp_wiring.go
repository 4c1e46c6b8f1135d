package sandbox

// seccompWanted reports whether the in-box init installs the seccomp filter.
// It is false until package sandbox/seccomp is part of the build.
const seccompWanted = false
