package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/xp-bench/xp/infra/tf"
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
	// signals delivers SIGINT, SIGTERM and SIGHUP; nil disables signal
	// handling.
	signals func() (<-chan os.Signal, func())
	// exit ends the process (os.Exit; tests replace it).
	exit func(code int)
	// terraform is what Terraform does in this process now: while it
	// runs, a second signal waits for it (see interruptible).
	terraform *tf.Activity
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
			ch := make(chan os.Signal, 4)
			// SIGHUP: a dropped terminal or SSH session is an interrupt,
			// not a reason to die with Terraform mid-apply.
			signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			return ch, func() { signal.Stop(ch) }
		},
		exit:      os.Exit,
		terraform: &tf.Activity{},
	}
}

// interruptible returns a context cancelled by the first SIGINT, SIGTERM
// or SIGHUP, which prints a line saying what xp does now (doing, or a
// generic line); a second signal exits the process at once with 130.
// While Terraform runs it is not killed with xp, which would lose what its
// calls in flight create: the first signal reaches it once, through the
// context (terraform-exec sends SIGINT, and Terraform stops after the
// calls in flight and saves its state); a second says what still runs and
// keeps waiting; only a third abandons it.
func (st *state) interruptible(parent context.Context, doing ...string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	if st.signals == nil {
		return ctx, cancel
	}
	say := "stopping"
	if len(doing) > 0 {
		say = doing[0]
	}
	exit := st.exit
	if exit == nil {
		exit = os.Exit
	}
	ch, stop := st.signals()
	done := make(chan struct{})
	go func() {
		var sig os.Signal
		select {
		case sig = <-ch:
			fmt.Fprintf(st.stderr, "xp: %s: %s (again exits at once, unless Terraform runs)\n", signalName(sig), say)
			cancel()
		case <-done:
			return
		}
		waited := false
		for {
			select {
			case sig = <-ch:
			case <-done:
				return
			}
			running := st.terraform.Running()
			switch {
			case len(running) > 0 && !waited:
				waited = true
				fmt.Fprintf(st.stderr, "xp: %s: waiting for Terraform to save its state: %s. "+
					"A third signal abandons it: what it is creating may then exist outside its state and keep costing "+
					"(xp infra down says where to look)\n", signalName(sig), strings.Join(running, "; "))
				continue
			case len(running) > 0:
				fmt.Fprintf(st.stderr, "xp: %s: abandoning Terraform (%s): what it was creating may exist outside its state; "+
					"run xp infra down, which says where to look\n", signalName(sig), strings.Join(running, "; "))
			}
			exit(exitInterrupted)
			return
		}
	}()
	return ctx, func() { close(done); stop(); cancel() }
}

// signalName names the signals interruptible handles as a person would.
func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGHUP:
		return "hang-up"
	case syscall.SIGTERM:
		return "terminated"
	}
	return "interrupt"
}
