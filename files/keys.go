package files

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"strings"

	"github.com/airlock-run/airlock/errs"
)

// Keys returns a tenant's 32-byte sealing key. A nil key with a nil error
// means the tenant's files are not sealed. An error means a key was
// configured and cannot be had; the store then refuses to write or read that
// tenant's files rather than fall back to keeping them in the clear.
type Keys func(tenant string) ([]byte, error)

// KeyFile returns Keys that read every tenant's key from the file at path:
// 32 raw bytes, or 64 hex digits, or the base64 of 32 bytes (surrounding
// white space ignored). The file is read on each call, so a key put in place
// after the store opened is used.
func KeyFile(path string) Keys {
	return func(string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "files: read the key file %s (create it with 32 random bytes, e.g. head -c32 /dev/urandom > %s)", path, path)
		}
		k, err := parseKey(b)
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "files: key file %s", path)
		}
		return k, nil
	}
}

// KeyEnv returns Keys that read every tenant's key from the environment
// variable name, looked up with getenv (64 hex digits or base64 of 32 bytes).
func KeyEnv(name string, getenv func(string) string) Keys {
	return func(string) ([]byte, error) {
		v := getenv(name)
		if v == "" {
			return nil, errs.Unavailablef("files: the key variable %s is not set (set it to 64 hex digits, e.g. $(head -c32 /dev/urandom | xxd -p -c64))", name)
		}
		k, err := parseKey([]byte(v))
		if err != nil {
			return nil, errs.Wrap(errs.Unavailable, err, "files: key variable %s", name)
		}
		return k, nil
	}
}

func parseKey(b []byte) ([]byte, error) {
	// 32 bytes of printable text are a typed key (16 bytes' worth of hex, a
	// password), too weak to take as raw; random bytes are almost never all
	// printable.
	if len(b) == 32 && !printable(b) {
		return append([]byte(nil), b...), nil
	}
	t := strings.TrimSpace(string(b))
	if k, err := hex.DecodeString(t); err == nil && len(k) == 32 {
		return k, nil
	}
	if k, err := base64.StdEncoding.DecodeString(t); err == nil && len(k) == 32 {
		return k, nil
	}
	return nil, errs.Invalidf("not a 256-bit key (want 32 raw bytes, 64 hex digits or base64 of 32 bytes)")
}

// keyID is a fingerprint of a key, kept beside the tenant so that a wrong key
// is reported as a wrong key and not as damaged files. It reveals nothing
// useful about a 256-bit random key.
func keyID(key []byte) string {
	h := sha256.Sum256(append([]byte("airlock files key check\x00"), key...))
	return hex.EncodeToString(h[:12])
}

// sealMagic starts a sealed blob; the nonce follows, then the ciphertext.
const sealMagic = "ALS1"

// sealOverhead is what sealing adds to a file's size.
const sealOverhead = len(sealMagic) + 12 + 16

// aad binds a sealed blob to its tenant and digest, so a blob moved to
// another name or another tenant's directory does not open.
func aad(tenant string, r Ref) []byte {
	return []byte("airlock-file\x00" + tenant + "\x00" + r.Hex())
}

func seal(key []byte, tenant string, r Ref, plain []byte) ([]byte, error) {
	g, err := gcm(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(sealMagic)+12, len(plain)+sealOverhead)
	copy(out, sealMagic)
	if _, err := rand.Read(out[len(sealMagic):]); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "files: draw a nonce")
	}
	return g.Seal(out, out[len(sealMagic):], plain, aad(tenant, r)), nil
}

// open decrypts a sealed blob in place; ok is false when it does not
// authenticate.
func open(key []byte, tenant string, r Ref, blob []byte) ([]byte, bool) {
	g, err := gcm(key)
	if err != nil || len(blob) < sealOverhead || string(blob[:len(sealMagic)]) != sealMagic {
		return nil, false
	}
	nonce := blob[len(sealMagic) : len(sealMagic)+12]
	ct := blob[len(sealMagic)+12:]
	p, err := g.Open(ct[:0], nonce, ct, aad(tenant, r))
	return p, err == nil
}

func gcm(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "files: sealing key")
	}
	return cipher.NewGCM(b)
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
