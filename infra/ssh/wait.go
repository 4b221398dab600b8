package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// WaitReport is how often Wait says which hosts it still waits for.
const WaitReport = 10 * time.Second

// Wait connects to every host of addrs (a name for messages → host:port),
// as the pool's Client does, but for as long as within rather than a
// number of retries, and retrying every failure but a refused host key:
// machines that were just created refuse, reset or do not answer at all
// (a dial timeout) until they have booted, and refuse the login until
// cloud-init has installed the key. Every WaitReport it writes to progress
// which hosts it is waiting for and why. The connections stay in the pool
// for the callers that follow. The error names every host that never
// answered, with its last error.
func (p *Pool) Wait(ctx context.Context, addrs map[string]string, within time.Duration, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	start := time.Now()
	var mu sync.Mutex
	waiting := map[string]error{} // name → last error, while not connected
	var wg sync.WaitGroup
	for name, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait := p.cfg.Backoff
			for {
				_, err := p.client(ctx, addr, 0)
				mu.Lock()
				switch {
				case err == nil:
					delete(waiting, name)
				case ctx.Err() != nil && waiting[name] != nil:
					// Cut by the deadline: the error before says more.
				default:
					waiting[name] = err
				}
				mu.Unlock()
				var he *HostKeyError
				if err == nil || errors.As(err, &he) || ctx.Err() != nil {
					return
				}
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				if wait < 8*p.cfg.Backoff {
					wait *= 2
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(WaitReport)
	defer tick.Stop()
	for {
		select {
		case <-done:
			mu.Lock()
			defer mu.Unlock()
			if len(waiting) == 0 {
				return nil
			}
			for _, n := range sortedNames(waiting) {
				// A refused key is no reason to wait: it is one to stop.
				var he *HostKeyError
				if errors.As(waiting[n], &he) {
					return fmt.Errorf("ssh %s: %w", n, waiting[n])
				}
			}
			return fmt.Errorf("ssh: no answer within %v (ssh.wait) from %s", within, describeWaiting(waiting, addrs))
		case <-tick.C:
			mu.Lock()
			if len(waiting) > 0 {
				fmt.Fprintf(progress, "ssh: waiting for %s to answer (%v of %v)\n", describeWaiting(waiting, addrs),
					time.Since(start).Round(time.Second), within)
			}
			mu.Unlock()
		}
	}
}

// describeWaiting names the hosts of waiting with their addresses and
// last errors, sorted by name.
func describeWaiting(waiting map[string]error, addrs map[string]string) string {
	names := sortedNames(waiting)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s (%s: %v)", n, addrs[n], waiting[n])
	}
	return strings.Join(parts, ", ")
}

func sortedNames(m map[string]error) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
