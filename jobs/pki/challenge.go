package pki

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"

	"github.com/airlock-run/airlock/errs"
)

// Attestation freshness. A report is signed at a time, but the time alone
// lets whoever kept a report register it again for as long as maxSkew (and
// a node's root could keep one signed while the host still confined and
// send it after the sandbox broke). So before each registration a node
// asks the server for a challenge (POST /v1/nodes/ID/challenge), signs it
// in its report, and the server takes each challenge once: a report that
// signs none, one it did not issue to that node, one used already or one
// issued more than ChallengeTTL ago is not fresh, and proves tier 0.

// ChallengeTTL is how long an issued challenge may be signed and used.
const ChallengeTTL = time.Minute

// maxChallenges bounds the challenges kept per node and asker: a node asks
// for one per registration, so more outstanding at once is only waste.
const maxChallenges = 4

// sweepAt is how many nodes' challenges are kept before the expired ones
// are swept.
const sweepAt = 1024

// challenges are the unused challenges issued to each node.
type challenges struct {
	mu     sync.Mutex
	byNode map[string][]issued
}

type issued struct {
	value string
	at    time.Time
	// asker is who asked for it (the API's principal): each asker's
	// challenges of a node are bounded on their own, so one asker's never
	// push out another's (an operator asking in a node's name does not
	// evict the challenge the node itself is about to sign).
	asker string
}

// Challenge issues a fresh challenge for node's next report, asked by
// asker (the requesting principal, e.g. "node:n1"): 32 random bytes, hex.
// Only the newest maxChallenges of each asker for a node are kept.
func (ca *CA) Challenge(node, asker string) (string, error) {
	if err := checkName("node id", node); err != nil {
		return "", err
	}
	var b [32]byte
	rand.Read(b[:])
	c := hex.EncodeToString(b[:])
	ch := &ca.challenges
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.byNode == nil {
		ch.byNode = map[string][]issued{}
	}
	now := ca.now()
	if len(ch.byNode) >= sweepAt {
		// Node ids are the asker's to name (an operator may name any),
		// so the ids whose challenges all expired are dropped.
		for n, list := range ch.byNode {
			if len(list) == 0 || now.Sub(list[len(list)-1].at) > ChallengeTTL {
				delete(ch.byNode, n)
			}
		}
	}
	ch.byNode[node] = append(keep(ch.byNode[node], asker, now), issued{value: c, at: now, asker: asker})
	return c, nil
}

// keep is list without its expired challenges and with room for one more
// of asker's: the oldest of asker's own go beyond maxChallenges-1, never
// another asker's.
func keep(list []issued, asker string, now time.Time) []issued {
	mine := 0
	for _, i := range list {
		if i.asker == asker && now.Sub(i.at) <= ChallengeTTL {
			mine++
		}
	}
	kept := list[:0:0]
	for _, i := range list {
		if now.Sub(i.at) > ChallengeTTL {
			continue
		}
		if i.asker == asker && mine >= maxChallenges {
			mine-- // asker's oldest, dropped for the new one
			continue
		}
		kept = append(kept, i)
	}
	return kept
}

// TakeChallenge uses up the challenge r signs, which must be one issued
// to r's node within ChallengeTTL and not used before; the error says why
// the report is not fresh.
func (ca *CA) TakeChallenge(r Report) error {
	if r.Challenge == "" {
		return errs.New(errs.Denied, "the report signs no challenge of the server's (a node older than the server: upgrade it)")
	}
	ch := &ca.challenges
	ch.mu.Lock()
	defer ch.mu.Unlock()
	list := ch.byNode[r.Node]
	for n, i := range list {
		// Constant time, though a challenge is no secret once signed: it
		// only has to be the one issued.
		if subtle.ConstantTimeCompare([]byte(i.value), []byte(r.Challenge)) != 1 {
			continue
		}
		ch.byNode[r.Node] = append(list[:n:n], list[n+1:]...)
		if ca.now().Sub(i.at) > ChallengeTTL {
			return errs.New(errs.Denied, "its challenge was issued more than %s before it was registered (an old report)", ChallengeTTL)
		}
		return nil
	}
	return errs.New(errs.Denied, "its challenge is not one the server issued to node %s, or was used already (a replayed or old report, or the server restarted since it was issued)", r.Node)
}
