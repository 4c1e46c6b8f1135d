package wire

import "time"

// Status is a job as a client reads it.
type Status struct {
	ID string `json:"id"`
	// State is "running", "completed", "failed", "canceled",
	// "terminated" or "timed out".
	State  string  `json:"state"`
	Result *Result `json:"result,omitempty"`
	// Error is why a failed job failed, as a person may read it.
	Error string `json:"error,omitempty"`
	// Started and Closed are when it began and ended (Closed zero while
	// it runs).
	Started time.Time `json:"started"`
	Closed  time.Time `json:"closed,omitzero"`
	// Summary is the job as its start recorded it (the workflow's memo).
	Summary Summary `json:"-"`
}
