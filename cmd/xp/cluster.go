package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// placeholder until the cluster subcommand lands.
func newClusterCmd(st *state) *cobra.Command {
	return &cobra.Command{
		Use:    "cluster",
		Short:  "(not built yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("cluster: not built yet")
		},
	}
}
