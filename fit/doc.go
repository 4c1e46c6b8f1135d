// Package fit cuts a tool's answer to what a model can afford to read: a
// token count close to a cl100k-class tokenizer (Count) and the weight
// budgets are measured in (Weigh: the count, with long runs of white space
// charged by their length), four views of a document
// (stub, summary, section, full), outlines made from the text's own structure
// (never by a model), the fit note every fitted answer carries, the hard caps
// and the default budget.
//
// The package does no I/O: it takes text and gives text, so any package may
// import it (the mediator, the offloader, the CLI, the MCP server) and its
// answers depend on nothing but their inputs.
//
// The views, from biggest to smallest:
//
//	full     the whole text
//	section  the whole parts a query names: a heading, a definition, a path,
//	         a diff hunk (path#n), a line range (120-180), a JSON key or item ([3])
//	summary  the outline with each part's first sentence, cut from the text
//	stub     kind, size and the outline alone; always says how to ask for more
//
// A view that does not fit its bounds falls to the next smaller one, never to
// a bigger one; the stub is the floor.
package fit
