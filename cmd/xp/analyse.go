package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// placeholder until the analyse subcommand lands.
func newAnalyseCmd(st *state) *cobra.Command {
	return &cobra.Command{
		Use:    "analyse",
		Short:  "(not built yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("analyse: not built yet")
		},
	}
}
