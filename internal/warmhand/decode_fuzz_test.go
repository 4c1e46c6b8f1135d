package warmhand

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeReplyAsJSON: a record DecodeReply reads, it reads as
// encoding/json reads it into a Reply (the old client's json.Unmarshal),
// bytes that are not UTF-8 included: a server's reason is shown to the
// person as the old client showed it.
func FuzzDecodeReplyAsJSON(f *testing.F) {
	for _, s := range []string{`{"answer":"cold","reason":"x"}`, `{"answer":"exit","code":-1}`, `{"answer":"challenge","fd":7}`, `{}`, `{"reason":"\u00e9\ud83d\ude80"}`, "{\"reason\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeReply(b)
		if err != nil {
			return
		}
		var want Reply
		if jerr := json.Unmarshal(b, &want); jerr != nil {
			t.Fatalf("%q: DecodeReply %+v, json %v", b, got, jerr)
		}
		if got != want {
			t.Fatalf("%q: DecodeReply %+v, json %+v", b, got, want)
		}
	})
}
