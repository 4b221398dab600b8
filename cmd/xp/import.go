package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// placeholder until the import subcommand lands.
func newImportCmd(st *state) *cobra.Command {
	return &cobra.Command{
		Use:    "import",
		Short:  "(not built yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("import: not built yet")
		},
	}
}
