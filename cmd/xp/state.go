package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"
)

// state carries everything a subcommand may take from the process: streams,
// environment, clock and signals. Tests build their own.
type state struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	now    func() time.Time
	// isTerminal reports whether stderr is a terminal (progress bars).
	isTerminal bool
	// signals delivers SIGINT/SIGTERM; nil disables signal handling.
	signals func() (<-chan os.Signal, func())
}

func newState() *state {
	return &state{
		stdin:      os.Stdin,
		stdout:     os.Stdout,
		stderr:     os.Stderr,
		getenv:     os.Getenv,
		now:        time.Now,
		isTerminal: term.IsTerminal(int(os.Stderr.Fd())),
		signals: func() (<-chan os.Signal, func()) {
			ch := make(chan os.Signal, 2)
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
			return ch, func() { signal.Stop(ch) }
		},
	}
}

// interruptible returns a context cancelled by the first SIGINT/SIGTERM,
// which prints a line saying what xp does now (doing, or a generic line);
// a second signal exits the process at once with 130.
func (st *state) interruptible(parent context.Context, doing ...string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	if st.signals == nil {
		return ctx, cancel
	}
	say := "stopping"
	if len(doing) > 0 {
		say = doing[0]
	}
	ch, stop := st.signals()
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			fmt.Fprintf(st.stderr, "xp: interrupt: %s (Ctrl-C again exits at once)\n", say)
			cancel()
		case <-done:
			return
		}
		select {
		case <-ch:
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() { close(done); stop(); cancel() }
}
