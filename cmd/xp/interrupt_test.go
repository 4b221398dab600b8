package main

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/tf"
)

// While Terraform runs, the first signal cancels (Terraform gets one
// interrupt, through the context), the second says what runs and waits,
// the third exits; without Terraform the second exits at once.
func TestInterruptibleWaitsForTerraform(t *testing.T) {
	for _, tc := range []struct {
		name      string
		terraform bool
		sigs      []os.Signal
		exits     bool
		say       []string
	}{
		{name: "one signal cancels", terraform: true, sigs: []os.Signal{syscall.SIGHUP}, say: []string{"xp: hang-up: tidying"}},
		{name: "second waits for terraform", terraform: true, sigs: []os.Signal{os.Interrupt, os.Interrupt},
			say: []string{"xp: interrupt: waiting for Terraform to save its state: terraform apply of group g1 in /d, for", "A third signal abandons it"}},
		{name: "third abandons terraform", terraform: true, sigs: []os.Signal{os.Interrupt, syscall.SIGTERM, os.Interrupt}, exits: true,
			say: []string{"xp: interrupt: abandoning Terraform (terraform apply of group g1 in /d, for"}},
		{name: "second exits without terraform", sigs: []os.Signal{syscall.SIGTERM, os.Interrupt}, exits: true,
			say: []string{"xp: terminated: tidying"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _, _ := testState()
			st.stderr = &lockedBuffer{}
			ch := make(chan os.Signal, 4)
			st.signals = func() (<-chan os.Signal, func()) { return ch, func() {} }
			exited := make(chan int, 1)
			st.exit = func(code int) { exited <- code }
			st.terraform = &tf.Activity{}
			if tc.terraform {
				done := st.terraform.Start("terraform apply of group g1 in /d")
				defer done()
			}
			ctx, stop := st.interruptible(context.Background(), "tidying")
			defer stop()
			for _, s := range tc.sigs {
				ch <- s
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the first signal did not cancel")
			}
			// What the handler says comes after it handled the signal it
			// answers: once said, only another signal could exit.
			out := st.stderr.(*lockedBuffer)
			deadline := time.Now().Add(5 * time.Second)
			for _, w := range tc.say {
				for !strings.Contains(out.String(), w) {
					if time.Now().After(deadline) {
						t.Fatalf("stderr lacks %q:\n%s", w, out.String())
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			if !tc.exits {
				select {
				case code := <-exited:
					t.Fatalf("exited %d", code)
				default:
				}
				return
			}
			select {
			case code := <-exited:
				if code != exitInterrupted {
					t.Fatalf("exited %d, want %d", code, exitInterrupted)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("did not exit")
			}
		})
	}
}
