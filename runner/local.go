package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/xp-bench/xp/infra/local"
)

// localTarget is the embedded cluster (infra/local): every security mode it
// serves, in this process, on loopback.
type localTarget struct {
	// dir holds each group's certificates and client configs; "" = a fresh
	// temporary directory per group.
	dir string

	mu       sync.Mutex
	cluster  *local.Cluster
	groupDir string // the running group's files, removed by Down
	groups   int
	modes    []string // cached by Modes
}

var (
	_ Target     = (*localTarget)(nil)
	_ ModeLister = (*localTarget)(nil)
)

func newLocalTarget(dir string) *localTarget { return &localTarget{dir: dir} }

// Up starts an embedded cluster with the group's broker count.
func (t *localTarget) Up(ctx context.Context, g Group) (Endpoints, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cluster != nil {
		t.cluster.Close()
		t.cluster = nil
	}
	if t.groupDir != "" {
		os.RemoveAll(t.groupDir)
	}
	t.groups++
	t.groupDir = ""
	if t.dir != "" {
		t.groupDir = filepath.Join(t.dir, fmt.Sprintf("group-%d", t.groups))
	}
	c, err := local.Start(ctx, local.Options{Brokers: g.Key.Brokers, Dir: t.groupDir})
	if err != nil {
		return Endpoints{}, err
	}
	t.cluster = c
	ep := Endpoints{Modes: map[string]Endpoint{}}
	for name, m := range c.Modes() {
		ep.Modes[name] = Endpoint{Bootstrap: strings.Split(m.Bootstrap, ","), ClientConfig: m.ClientConfig}
	}
	return ep, nil
}

// Down stops the embedded cluster.
func (t *localTarget) Down(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cluster == nil {
		return nil
	}
	err := t.cluster.Close()
	t.cluster = nil
	if t.groupDir != "" {
		if rerr := os.RemoveAll(t.groupDir); err == nil {
			err = rerr
		}
		t.groupDir = ""
	}
	return err
}

// Modes starts a one-broker cluster once to learn which modes the embedded
// cluster serves, so that modes added to it later are picked up without
// changes here.
func (t *localTarget) Modes(ctx context.Context) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.modes != nil {
		return t.modes, nil
	}
	c, err := local.Start(ctx, local.Options{Brokers: 1})
	if err != nil {
		return nil, fmt.Errorf("local target: %w", err)
	}
	defer c.Close()
	for name := range c.Modes() {
		t.modes = append(t.modes, name)
	}
	sort.Strings(t.modes)
	return t.modes, nil
}
