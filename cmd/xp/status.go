package main

import (
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/runner"
)

func newStatusCmd(st *state) *cobra.Command {
	var db string
	var asJSON bool
	c := &cobra.Command{
		Use:   "status [--db FILE] [--json]",
		Short: "Show a campaign's progress: rows by state, attempts, current row, elapsed, ETA, infrastructure",
		Long: `Status reads a campaign db without locking it, so it can run while xp run works.
With --json it prints one object (documented in docs/running.md).`,
		Args: dbFlagArgs("status"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if db == "" {
				found, err := runner.FindDB(".")
				if err != nil {
					return usageErr(err)
				}
				db = found
			}
			s, err := runner.ReadStatus(cmd.Context(), db, st.now())
			if errors.Is(err, runner.ErrBadInput) {
				return usageErr(err)
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(st.stdout)
				return enc.Encode(s)
			}
			s.WriteText(st.stdout)
			return nil
		},
	}
	c.Flags().StringVar(&db, "db", "", "campaign db (default: the only *.db in the current directory)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}
