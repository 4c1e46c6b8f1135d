package api

import "github.com/airlock-run/airlock/api/wire"

// The API's bodies live in api/wire, which links no Temporal package, so
// that the airlock binary's HTTP clients read them without the SDK; these
// are the same types under their api names.
type (
	NodeEntry     = wire.NodeEntry
	StartRequest  = wire.StartRequest
	Started       = wire.Started
	JobView       = wire.JobView
	Killed        = wire.Killed
	AnswerRequest = wire.AnswerRequest
	OptOut        = wire.OptOut
	OptOutRequest = wire.OptOutRequest
	FileInfo      = wire.FileInfo
	Kept          = wire.Kept
)
