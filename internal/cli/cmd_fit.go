package cli

func fitCmd() *Command { return notYet("fit", "fit a text to a token budget") }
