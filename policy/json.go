package policy

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// The JSON form of a Policy is a policy document: what `airlock policy
// show` prints can be read back by Parse and means the same.

// MarshalJSON writes sizes and durations the way a policy spells them.
func (l Limits) MarshalJSON() ([]byte, error) {
	out := map[string]any{}
	if l.Memory != 0 {
		out["memory"] = sizeString(l.Memory)
	}
	if l.CPU != 0 {
		out["cpu"] = strconv.FormatFloat(l.CPU, 'f', -1, 64)
	}
	if l.Wall != 0 {
		out["wall"] = l.Wall.String()
	}
	if l.Pids != 0 {
		out["pids"] = l.Pids
	}
	if l.ModelTokens != 0 {
		out["model_tokens"] = l.ModelTokens
	}
	return json.Marshal(out)
}

func sizeString(n int64) string {
	for _, u := range []struct {
		unit  string
		shift uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.unit)
		}
	}
	return strconv.FormatInt(n, 10)
}

// MarshalJSON writes the timeout as a duration.
func (e Escalation) MarshalJSON() ([]byte, error) {
	if e.Timeout == 0 {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]string{"timeout": e.Timeout.String()})
}

// MarshalJSON writes the short form (a verdict) when there are no
// conditions, and the long form with its else otherwise.
func (r ToolRule) MarshalJSON() ([]byte, error) {
	if len(r.When) == 0 {
		return json.Marshal(r.Verdict)
	}
	return json.Marshal(struct {
		Verdict Verdict             `json:"verdict"`
		When    map[string][]string `json:"when"`
		Else    Verdict             `json:"else"`
	}{r.Verdict, r.When, r.Else})
}

// MarshalJSON leaves allow out when it is not given (any program), which is
// not the same as an empty list (no program).
func (s Shell) MarshalJSON() ([]byte, error) {
	out := map[string]any{"spawn": s.Spawn}
	if s.Allow != nil {
		out["allow"] = s.Allow
	}
	if len(s.Args) > 0 {
		out["args"] = s.Args
	}
	if s.Raw != nil {
		out["raw"] = *s.Raw
	}
	if s.RunWritten {
		out["run_written"] = true
	}
	return json.Marshal(out)
}
