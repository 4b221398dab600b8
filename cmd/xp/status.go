package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// placeholder until the status subcommand lands.
func newStatusCmd(st *state) *cobra.Command {
	return &cobra.Command{
		Use:    "status",
		Short:  "(not built yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("status: not built yet")
		},
	}
}
