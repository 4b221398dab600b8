package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// placeholder until the loadgen subcommand lands.
func newLoadgenCmd(st *state) *cobra.Command {
	return &cobra.Command{
		Use:    "loadgen",
		Short:  "(not built yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("loadgen: not built yet")
		},
	}
}
