package fit_test

import (
	"fmt"

	"github.com/airlock-run/airlock/fit"
)

func ExampleFit() {
	doc := "# Service\n\nRuns jobs.\n\n## Install\n\nRun make. It takes a minute.\n\n## Configure\n\nEdit config.yaml. Restart.\n"
	res := fit.Fit(doc, fit.Request{View: fit.Section, Query: "Install", Name: "README.md"})
	fmt.Print(res.Text)
	fmt.Println(res.Note.View, res.Kind)
	// Output:
	// ## Install
	//
	// Run make. It takes a minute.
	//
	// section markdown
}

func ExampleDefaultBudget() {
	fmt.Println(fit.DefaultBudget(40000, false), fit.DefaultBudget(40000, true))
	// Output: 8000 4000
}
