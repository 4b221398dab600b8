package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes of the CLI contract.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInvalidRuns = 3
	exitInterrupted = 130
)

// exitError carries a specific exit code up to execute.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks err as bad input (exit 2).
func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

// usageErrf is usageErr with formatting.
func usageErrf(format string, a ...any) error { return usageErr(fmt.Errorf(format, a...)) }

// withCode marks err with an exit code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

func execute(st *state, args []string) int {
	root := newRootCmd(st)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	code := exitFailure
	if errors.As(err, &ee) {
		code = ee.code
	} else if isFlagError(err) || strings.HasPrefix(err.Error(), "unknown command") {
		code = exitUsage
	}
	if ee == nil || ee.err != nil && ee.err.Error() != "" {
		fmt.Fprintf(st.stderr, "xp: %v\n", err)
	}
	return code
}

// flagError marks errors raised by cobra's own flag and argument parsing.
type flagError struct{ error }

func (e flagError) Unwrap() error { return e.error }

func isFlagError(err error) bool {
	var fe flagError
	return errors.As(err, &fe)
}

func newRootCmd(st *state) *cobra.Command {
	root := &cobra.Command{
		Use:           "xp",
		Short:         "Measure what Kafka security costs, with matched randomized experiments",
		SilenceUsage:  true,
		SilenceErrors: true,
		// xp alone teaches the workflow, and exits 2: it did nothing.
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprint(st.stderr, workflow)
			return withCode(exitUsage, errors.New(""))
		},
	}
	root.SetOut(st.stdout)
	root.SetErr(st.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return flagError{fmt.Errorf("%s: %w (see %s --help)", c.CommandPath(), err, c.CommandPath())}
	})
	root.AddCommand(
		newPlanCmd(st),
		newRunCmd(st),
		newStatusCmd(st),
		newAnalyseCmd(st),
		newCompareCmd(st),
		newExploreCmd(st),
		newImportCmd(st),
		newLoadgenCmd(st),
		newClusterCmd(st),
		newGatewayCmd(st),
		newInfraCmd(st),
		newAgentCmd(st),
	)
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	return root
}

// wrapArgs turns positional-argument errors into usage errors, recursively.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		inner := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := inner(cmd, args); err != nil {
				return flagError{fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}
