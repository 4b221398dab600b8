package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// placeholder until the plan subcommand lands.
func newPlanCmd(st *state) *cobra.Command {
	return &cobra.Command{
		Use:    "plan",
		Short:  "(not built yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("plan: not built yet")
		},
	}
}
