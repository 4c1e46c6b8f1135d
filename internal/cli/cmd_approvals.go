package cli

func approvalsCmd() *Command { return notYet("approvals", "list and decide pending escalations") }
