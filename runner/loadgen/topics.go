package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runTopics is the admin side of a run's topics, shared by every client:
// made (or found) before the load, deleted with the consumer groups the
// run joined after it, once, unless the run keeps them (--keep-topic).
type runTopics struct {
	r     *run
	admin *kgo.Client
	adm   *kadm.Client
	done  bool // deleted, or kept
}

// openTopics opens the run's admin client and prepares its topics;
// existed says they were there before. On error what was made is
// deleted and the client closed; otherwise close does both.
func (r *run) openTopics(ctx context.Context) (t *runTopics, existed bool, err error) {
	admin, err := kgo.NewClient(r.base...)
	if err != nil {
		return nil, false, r.fail("%v", err)
	}
	t = &runTopics{r: r, admin: admin, adm: kadm.NewClient(admin), done: r.cfg.KeepTopic}
	if existed, err = r.prepareTopics(ctx, t.adm); err != nil {
		t.close()
		return nil, false, err
	}
	return t, existed, nil
}

// remove deletes the run's topics and groups, once, and says what it
// could not delete.
func (t *runTopics) remove() (warnings []string) {
	if t.done {
		return nil
	}
	t.done = true
	if err := t.r.deleteTopics(t.adm); err != nil {
		warnings = append(warnings, fmt.Sprintf("topics not deleted: %v", err))
	}
	if err := t.r.deleteGroups(t.adm); err != nil {
		warnings = append(warnings, fmt.Sprintf("consumer groups not deleted: %v", err))
	}
	return warnings
}

// close removes what remove has not (a run that failed midway) and closes
// the admin client.
func (t *runTopics) close() {
	t.remove()
	t.admin.Close()
}

// topicNames lists the n topics of a run named name: name itself when n is
// 1, else name-0 .. name-(n-1).
func topicNames(name string, n int) []string {
	if n <= 1 {
		return []string{name}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", name, i)
	}
	return out
}

// firstTopic is the topic producer k starts its round robin at: producers
// start spread over the topics, at an offset fixed by the seed.
func (r *run) firstTopic(k int) int {
	return int((uint64(r.cfg.Seed) + uint64(k)) % uint64(len(r.topics)))
}

// prepareTopics creates the run's topics, or finds the named ones that
// already exist (kept in r.created, r.parts), and returns whether any
// already existed. On error r.created still lists the topics to delete.
func (r *run) prepareTopics(ctx context.Context, adm *kadm.Client) (existed bool, err error) {
	cfg := r.cfg
	r.name = cfg.Topic
	if r.name == "" {
		r.name = fmt.Sprintf("xp-%d-%04x", time.Now().UnixNano(), rand.Uint32()&0xffff)
	}
	r.topics = topicNames(r.name, cfg.Topics)
	what := "topic " + r.name
	if len(r.topics) > 1 {
		what = fmt.Sprintf("topics %s-0 .. %s-%d", r.name, r.name, len(r.topics)-1)
	}
	var configs map[string]*string
	if cfg.MinInsyncReplicas > 0 {
		v := fmt.Sprint(cfg.MinInsyncReplicas)
		configs = map[string]*string{"min.insync.replicas": &v}
	}
	rf := int16(cfg.ReplicationFactor)
	if rf == 0 {
		rf = -1 // the broker's default.replication.factor
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	resps, err := adm.CreateTopics(cctx, int32(cfg.Partitions), rf, configs, r.topics...)
	cancel()
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return false, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return false, r.fail("create %s: no answer within %v: %v", what, connectTimeout, err)
	default:
		return false, r.fail("create %s: %v", what, err)
	}
	r.parts = make([]int, len(r.topics))
	var existing []string
	var createErr error
	for i, t := range r.topics {
		resp, ok := resps[t]
		switch {
		case !ok:
			createErr = errors.Join(createErr, fmt.Errorf("create topic %s: no answer for it", t))
		case resp.Err == nil:
			r.created = append(r.created, t)
			r.parts[i] = cfg.Partitions
		case cfg.Topic != "" && errors.Is(resp.Err, kerr.TopicAlreadyExists):
			existing = append(existing, t)
		default:
			createErr = errors.Join(createErr, fmt.Errorf("create topic %s: %v", t, resp.Err))
		}
	}
	if createErr != nil {
		return false, r.fail("%v", createErr)
	}
	if len(existing) == 0 {
		return false, nil
	}
	mctx, cancel := context.WithTimeout(ctx, connectTimeout)
	td, err := adm.ListTopics(mctx, existing...)
	cancel()
	if err != nil {
		return true, r.fail("describe %s: %v", what, err)
	}
	for i, t := range r.topics {
		if r.parts[i] > 0 {
			continue
		}
		d, ok := td[t]
		if !ok || d.Err != nil || len(d.Partitions) == 0 {
			return true, r.fail("describe topic %s: not found (%v)", t, d.Err)
		}
		r.parts[i] = len(d.Partitions)
	}
	return true, nil
}

// indexTopics numbers the partitions of all the run's topics in one
// sequence (r.first, for the per-partition state of r.seen), maps each
// topic to its index (r.index), makes the per-topic counts, and returns
// the total number of partitions.
func (r *run) indexTopics() (nparts int) {
	r.index = make(map[string]int, len(r.topics))
	r.first = make([]int, len(r.topics))
	for i, t := range r.topics {
		r.index[t] = i
		r.first[i] = nparts
		nparts += r.parts[i]
	}
	r.counts = make([]topicCounts, len(r.topics))
	return nparts
}

// deleteTopics deletes the topics the run created.
func (r *run) deleteTopics(adm *kadm.Client) error {
	if len(r.created) == 0 {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	resps, err := adm.DeleteTopics(dctx, r.created...)
	if err != nil {
		return err
	}
	for _, t := range r.created {
		if resp, ok := resps[t]; ok && resp.Err != nil {
			err = errors.Join(err, fmt.Errorf("%s: %w", t, resp.Err))
		}
	}
	return err
}

// GroupName is the name of consumer group g (from 0) of a run whose topic
// (or prefix of topics) is name: name-g0, name-g1, ...
func GroupName(name string, g int) string {
	return fmt.Sprintf("%s-g%d", name, g)
}

// deleteGroups deletes the consumer groups the run joined, once its
// consumers have left them: they commit no offsets, but an empty group
// stays listed on the cluster until its coordinator expires it. A group
// already gone is no error.
func (r *run) deleteGroups(adm *kadm.Client) error {
	if len(r.groups) == 0 {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	resps, err := adm.DeleteGroups(dctx, r.groups...)
	if err != nil {
		return err
	}
	for _, g := range r.groups {
		if resp, ok := resps[g]; ok && resp.Err != nil && !errors.Is(resp.Err, kerr.GroupIDNotFound) {
			err = errors.Join(err, fmt.Errorf("%s: %w", g, resp.Err))
		}
	}
	return err
}
