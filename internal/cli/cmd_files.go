package cli

func filesCmd() *Command { return notYet("files", "the content-addressed file store") }
