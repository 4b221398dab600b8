package tf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/xp-bench/xp/internal/durable"
)

// Activity is what Terraform is doing in this process now: a signal
// handler asks it whether to wait (Terraform saving its state after an
// interrupt) and what to say while it waits. The zero value is ready; a
// nil *Activity records nothing.
type Activity struct {
	mu   sync.Mutex
	next int
	ops  map[int]runningOp
}

type runningOp struct {
	what  string
	since time.Time
}

// Start records a Terraform command, described by what, until the
// returned func is called.
func (a *Activity) Start(what string) func() {
	if a == nil {
		return func() {}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ops == nil {
		a.ops = map[int]runningOp{}
	}
	id := a.next
	a.next++
	a.ops[id] = runningOp{what: what, since: time.Now()}
	return func() {
		a.mu.Lock()
		delete(a.ops, id)
		a.mu.Unlock()
	}
}

// Running describes each Terraform command running now ("terraform apply
// of group G in DIR, for 1m30s"), oldest first; empty when none.
func (a *Activity) Running() []string {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ops := make([]runningOp, 0, len(a.ops))
	for _, op := range a.ops {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].since.Before(ops[j].since) })
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = fmt.Sprintf("%s, for %s", op.what, time.Since(op.since).Round(time.Second))
	}
	return out
}

// runningFile, in a group's working directory, says that an xp process
// runs terraform apply or destroy there; it is removed when Terraform
// exits on its own. Found by a later process, it means Terraform did not:
// its xp process died (a third interrupt, SIGKILL) and Terraform with it,
// or a signal from elsewhere (the OOM killer, kill -9) ended Terraform.
// Either way what it was creating may exist outside its state, and the
// mark stays until the group is destroyed (xp infra down).
const runningFile = ".xp-terraform-running"

type runMark struct {
	Op      string    `json:"op"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Killed says how Terraform ended when a signal ended it while xp
	// lived ("signal: killed"); empty while it runs and when xp died.
	Killed string `json:"killed,omitempty"`
}

// KilledError is a terraform apply or destroy that did not exit on its
// own: a signal that did not come from xp (xp only interrupts) ended it,
// maybe before it saved its state.
type KilledError struct {
	Op  string // "apply" or "destroy"
	How string // "signal: killed"
	Err error
}

func (e *KilledError) Error() string {
	return fmt.Sprintf("terraform %s was killed (%s), not by xp, before it could save its state: what it was creating may exist "+
		"outside its state; xp infra down destroys what the state holds and says where to look for the rest", e.Op, e.How)
}

func (e *KilledError) Unwrap() error { return e.Err }

// killedBy says how a terraform command that a signal ended died ("signal:
// killed"); ok is false when it exited by itself, whatever its status.
func killedBy(err error) (how string, ok bool) {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ProcessState != nil && !ee.Exited() {
		return ee.ProcessState.String(), true
	}
	return "", false
}

// terraform runs fn, a terraform apply or destroy (op) of group in dir,
// marking it in dir (runningFile, on disk before Terraform starts) and in
// p.Activity while it runs. The mark is removed when Terraform exits on
// its own; when a signal killed it, the mark stays, saying how, and the
// error is a *KilledError. The mark of an earlier Terraform that never
// ended is left as it is: what that one may have left outside the state
// is not found by this one.
func (p *Provisioner) terraform(op, group, dir string, fn func() error) error {
	mark := filepath.Join(dir, runningFile)
	_, statErr := os.Stat(mark)
	earlier := statErr == nil
	m := runMark{Op: op, PID: os.Getpid(), Started: p.now()}
	if !earlier {
		b, _ := json.Marshal(m)
		if err := durable.WriteFile(mark, b, 0o600); err != nil {
			return err
		}
	}
	done := p.Activity.Start(fmt.Sprintf("terraform %s of group %s in %s", op, group, dir))
	err := fn()
	done()
	if how, killed := killedBy(err); killed {
		if !earlier {
			m.Killed = how
			b, _ := json.Marshal(m)
			if werr := durable.WriteFile(mark, b, 0o600); werr != nil {
				err = errors.Join(err, werr)
			}
		}
		return &KilledError{Op: op, How: how, Err: err}
	}
	if !earlier {
		if rerr := durable.Remove(mark); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// Abandoned is a terraform apply or destroy that did not exit on its own
// (its xp process died while it ran, or a signal killed it): resources it
// was creating may exist in the cloud, and cost, without being in the
// group's state, where a destroy cannot see them.
type Abandoned struct {
	Group   string
	Op      string
	PID     int
	Started time.Time
	// Killed says how a signal ended Terraform while xp lived ("signal:
	// killed"); empty when xp died with it.
	Killed   string
	Platform string
	// Campaign, Slug and Region are the group's campaign, group and
	// region variables: the tags and the place to look.
	Campaign, Slug, Region string
}

// Abandoned lists the groups not recorded as down whose working directory
// holds the mark of a Terraform command that never returned.
func (p *Provisioner) Abandoned(ctx context.Context) ([]Abandoned, error) {
	last, order, err := p.latest(ctx)
	if err != nil {
		return nil, err
	}
	var out []Abandoned
	for _, g := range order {
		e := last[g]
		if e.Event == EventDown {
			continue
		}
		var o eventOutputs
		if json.Unmarshal(e.Outputs, &o) != nil || o.Dir == "" {
			continue
		}
		if a, ok := abandonedIn(g, o); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// abandonedIn reads the running mark in o.Dir, group's working directory.
func abandonedIn(group string, o eventOutputs) (Abandoned, bool) {
	b, err := os.ReadFile(filepath.Join(o.Dir, runningFile))
	if err != nil {
		return Abandoned{}, false
	}
	var m runMark
	json.Unmarshal(b, &m)
	str := func(k string) string { s, _ := o.Vars[k].(string); return s }
	return Abandoned{Group: group, Op: m.Op, PID: m.PID, Started: m.Started, Killed: m.Killed, Platform: o.Platform,
		Campaign: str("campaign"), Slug: str("group"), Region: str("region")}, true
}

// Advice says what may be left outside the state and how to find it: the
// modules tag every resource with the campaign and the group
// (terraform/README.md), and the cloud's CLI lists what carries both.
func (a Abandoned) Advice() string {
	op := a.Op
	if op == "" {
		op = "apply"
	}
	ended := "was abandoned before Terraform saved its state (xp died while it ran)"
	if a.Killed != "" {
		ended = fmt.Sprintf("was killed (%s), not by xp, before Terraform could save its state", a.Killed)
	}
	s := fmt.Sprintf("group %s: the terraform %s started %s by xp (pid %d) %s: ",
		a.Group, op, a.Started.Format(time.RFC3339), a.PID, ended)
	switch a.Platform {
	case "aws":
		region := a.Region
		if region == "" {
			region = "REGION"
		}
		return s + fmt.Sprintf("resources it was creating may exist outside the state and keep costing. "+
			"Once the group is destroyed (xp infra down), list what is left, in the console (Resource Groups & Tag Editor) or with the CLI, by the tags xp:campaign=%[1]s and xp:group=%[2]s:\n"+
			"  aws resourcegroupstaggingapi get-resources --region %[3]s --tag-filters Key=xp:campaign,Values=%[1]s Key=xp:group,Values=%[2]s\n"+
			"and delete it in the console or with the service's CLI (instances first: aws ec2 terminate-instances --region %[3]s --instance-ids ...)",
			a.Campaign, a.Slug, region)
	case "azure":
		return s + fmt.Sprintf("resources it was creating may exist outside the state and keep costing. "+
			"Once the group is destroyed (xp infra down), list what is left, in the portal (All resources, filtered by tag) or with the CLI, by the tags xp-campaign=%[1]s and xp-group=%[2]s:\n"+
			"  az resource list --tag xp-group=%[2]s --query \"[?tags.\\\"xp-campaign\\\"=='%[1]s']\" -o table\n"+
			"and delete the group's resource group if it is still there: az group delete --name xp-%[1]s-%[2]s",
			a.Campaign, a.Slug)
	}
	return s + fmt.Sprintf("platform %s creates nothing in a cloud, so nothing can be left costing outside the state", a.Platform)
}

// interrupted says an apply or destroy that an interrupt stopped.
func interrupted(op string) error {
	return fmt.Errorf("terraform %s interrupted: Terraform stopped after the calls in flight and saved its state; "+
		"xp infra down destroys what it holds", strings.TrimSpace(op))
}
