package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// placeholder until the run subcommand lands.
func newRunCmd(st *state) *cobra.Command {
	return &cobra.Command{
		Use:    "run",
		Short:  "(not built yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("run: not built yet")
		},
	}
}
