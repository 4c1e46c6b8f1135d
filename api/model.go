package api

import (
	"regexp"

	"github.com/airlock-run/airlock/errs"
)

// modelName is what a model's name may be: a provider's name for it
// ("gpt-5", "anthropic/claude-3-5-sonnet@20241022",
// "us.anthropic.claude-3-sonnet-20240229-v1:0"), at most 200 characters.
var modelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$`)

// checkModel refuses a model name that is not a name: it becomes part of a
// job's taint, which the audit log, the provenance file, every file the
// job keeps and the questions a person answers repeat, so no control
// character, line break or text of any length rides in on it.
func checkModel(model string) error {
	if model == "" || modelName.MatchString(model) {
		return nil
	}
	return errs.Invalidf("model: want a model's name (letters, digits and . _ : / @ + -, at most 200, starting with a letter or digit)")
}
