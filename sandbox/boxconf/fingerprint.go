package boxconf

import "strconv"

// Revision is bumped when the in-box code's reading of this protocol
// changes while its types stay the same (what a field means, an order of
// steps the host relies on, the walls' encoding).
const Revision = 2

// Fingerprint names this build's protocol: a hash of Revision, the flags,
// the walls' encoding and every type that crosses into the box or back,
// field by field with its JSON name. The host sends it with the
// configuration and the walls (Config.Proto, Walls.Proto); the in-box code
// refuses any other, so an airlock-box left from another build than the
// airlock binary that planned the box fails closed, naming the fix,
// instead of reading the plan its own way (an older one would drop a field
// it does not know, and with it a wall).
func Fingerprint() string { return fingerprint }

// fingerprint is the hash TestFingerprint computes from the types, kept
// as a constant: the in-box code compares one string at every box's start
// instead of walking the types by reflection and hashing them. A change
// to a type, a flag or Revision fails that test until this is the new
// hash, so the constant cannot go stale in a build whose tests pass.
const fingerprint = "53ba5986e90be8eaa96a1abc"

// AccessWord is Walls.Access for the file-system rights fs and the scopes
// a Landlock ruleset handles.
func AccessWord(fs, scoped uint64) string {
	return strconv.FormatUint(fs, 16) + " " + strconv.FormatUint(scoped, 16)
}
