package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// placeholder until the gateway subcommand lands.
func newGatewayCmd(st *state) *cobra.Command {
	return &cobra.Command{
		Use:    "gateway",
		Short:  "(not built yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("gateway: not built yet")
		},
	}
}
