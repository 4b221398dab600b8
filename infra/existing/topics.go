package existing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// EventTopics is the infrastructure event that records the topics and
// consumer groups of a load before they are created: the campaign db then
// knows every topic and group xp made on the cluster, also those a killed
// run left.
const EventTopics = "topics"

// topicsEvent is an EventTopics event's outputs.
type topicsEvent struct {
	Run    string   `json:"run"`
	Topics []string `json:"topics"`
	// Groups are the load's consumer groups (loadgen.GroupName); events
	// of an xp before it recorded them have none (see owned).
	Groups []string `json:"groups,omitempty"`
}

// newTopic names the topic (or the prefix of the topics, with more than
// one) of a load of row r with n topics and groups consumer groups, and
// records the names in the campaign db: the topic prefix, the campaign,
// the run and 8 random hex digits; the groups after it.
func (t *Target) newTopic(ctx context.Context, r *planner.Row, n, groups int) (string, error) {
	t.mu.Lock()
	events := t.events
	t.mu.Unlock()
	if events == nil {
		return "", errors.New("existing: no campaign db to record the load's topics in")
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	name := fmt.Sprintf("%s%s-%s-%s", t.file.Existing.TopicPrefix, r.Campaign, r.Run, hex.EncodeToString(rnd[:]))
	te := topicsEvent{Run: r.Run, Topics: []string{name}}
	if n > 1 {
		te.Topics = te.Topics[:0]
		for i := range n {
			te.Topics = append(te.Topics, fmt.Sprintf("%s-%d", name, i))
		}
	}
	for g := range groups {
		te.Groups = append(te.Groups, loadgen.GroupName(name, g))
	}
	out, _ := json.Marshal(te)
	if _, err := events.AddInfraEvent(ctx, results.InfraEvent{Event: EventTopics, Time: time.Now(), Outputs: out}); err != nil {
		return "", fmt.Errorf("existing: record the topics of %s: %w", r.Run, err)
	}
	return name, nil
}

// owned is what the campaign db records xp made on the cluster.
type owned struct {
	topics, groups map[string]bool
	// loads are the topic names (prefixes with several topics) of loads
	// recorded without their groups, by an earlier xp: their groups are
	// loadgen.GroupName's of them.
	loads map[string]bool
}

// group reports whether consumer group g is one of the campaign's.
func (o owned) group(g string) bool {
	if o.groups[g] {
		return true
	}
	i := strings.LastIndex(g, "-g")
	if i < 0 {
		return false
	}
	n := g[i+2:]
	return n != "" && strings.Trim(n, "0123456789") == "" && o.loads[g[:i]]
}

// recorded is what events records; nothing without events.
func recorded(ctx context.Context, events target.InfraEvents) (owned, error) {
	out := owned{topics: map[string]bool{}, groups: map[string]bool{}, loads: map[string]bool{}}
	if events == nil {
		return out, nil
	}
	evs, err := events.InfraEvents(ctx)
	if err != nil {
		return out, err
	}
	for _, e := range evs {
		if e.Event != EventTopics {
			continue
		}
		var te topicsEvent
		if json.Unmarshal(e.Outputs, &te) != nil {
			continue
		}
		for _, n := range te.Topics {
			out.topics[n] = true
		}
		for _, g := range te.Groups {
			out.groups[g] = true
		}
		if len(te.Groups) == 0 && len(te.Topics) > 0 {
			load := te.Topics[0]
			if len(te.Topics) > 1 {
				load = strings.TrimSuffix(load, "-0")
			}
			out.loads[load] = true
		}
	}
	return out, nil
}

// clusterTopics are the cluster's topics under topic_prefix, through
// mode's endpoint: the names only (a Metadata request), never a record;
// internal the internal topics (__consumer_offsets, ...) among them.
type clusterTopics struct {
	names, internal []string
}

// prefixed lists the cluster's topics under topic_prefix, internal topics
// included.
func (t *Target) prefixed(ctx context.Context, mode string) (clusterTopics, error) {
	cl, err := t.client(mode)
	if err != nil {
		return clusterTopics{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopicsWithInternal(ctx)
	if err != nil {
		return clusterTopics{}, fmt.Errorf("list the cluster's topics: %w", err)
	}
	var out clusterTopics
	for name, d := range td {
		if !strings.HasPrefix(name, t.file.Existing.TopicPrefix) {
			continue
		}
		if d.IsInternal {
			out.internal = append(out.internal, name)
		} else {
			out.names = append(out.names, name)
		}
	}
	slices.Sort(out.names)
	slices.Sort(out.internal)
	return out, nil
}

// checkTopics refuses to start while topic_prefix covers an internal
// topic of the cluster, or topics under it exist that the campaign's db
// does not record: they are someone else's (or another campaign's), and
// xp touches only its own.
func (t *Target) checkTopics(ctx context.Context, mode string, events target.InfraEvents) error {
	have, err := t.prefixed(ctx, mode)
	if err != nil {
		return err
	}
	if len(have.internal) > 0 {
		where := t.cfg.Path
		if l := t.file.Existing.TopicPrefixLine; l > 0 {
			where = fmt.Sprintf("%s:%d", where, l)
		}
		return fmt.Errorf("%s: topic_prefix %q covers the cluster's internal topics %s: xp would create its topics among Kafka's own; "+
			"choose a topic_prefix that none of them starts with, e.g. %q",
			where, t.file.Existing.TopicPrefix, strings.Join(have.internal, ", "), targetfile.DefaultTopicPrefix)
	}
	ours, err := recorded(ctx, events)
	if err != nil {
		return err
	}
	var foreign []string
	for _, n := range have.names {
		if !ours.topics[n] {
			foreign = append(foreign, n)
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	shown := foreign[:min(5, len(foreign))]
	more := ""
	if len(foreign) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(foreign)-len(shown))
	}
	return fmt.Errorf("the cluster has %d topics under topic_prefix %q that this campaign's db (%s) does not record: %s%s; "+
		"xp creates, uses and deletes only its own topics there: choose another topic_prefix in %s, or have those topics deleted",
		len(foreign), t.file.Existing.TopicPrefix, t.cfg.DB, strings.Join(shown, ", "), more, t.cfg.Path)
}

// sweep deletes the topics and consumer groups the campaign's db records
// that still exist (a killed run's, or every one after --keep); no other
// topic or group. t.mu is held.
func (t *Target) sweep(ctx context.Context) error {
	if t.events == nil || t.cluster == nil {
		return nil
	}
	ours, err := recorded(ctx, t.events)
	if err != nil || len(ours.topics) == 0 {
		return err
	}
	have, err := t.prefixed(ctx, t.cluster.From)
	if err != nil {
		return err
	}
	var del []string
	for _, n := range have.names {
		if ours.topics[n] {
			del = append(del, n)
		}
	}
	cl, err := t.client(t.cluster.From)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	dctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	if len(del) > 0 {
		resps, derr := adm.DeleteTopics(dctx, del...)
		if derr != nil {
			err = fmt.Errorf("existing: delete the campaign's topics %s: %w", strings.Join(del, ", "), derr)
		}
		for _, n := range del {
			if r, ok := resps[n]; ok && r.Err != nil {
				err = errors.Join(err, fmt.Errorf("existing: delete topic %s: %w", n, r.Err))
			}
		}
		if err == nil {
			fmt.Fprintf(t.log, "existing: deleted %d topics an earlier run of the campaign left: %s\n", len(del), strings.Join(del, ", "))
		}
	}
	return errors.Join(err, t.sweepGroups(dctx, adm, ours))
}

// sweepGroups deletes the consumer groups ours records that the cluster
// still lists.
func (t *Target) sweepGroups(ctx context.Context, adm *kadm.Client, ours owned) error {
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("existing: list the cluster's consumer groups: %w", err)
	}
	var del []string
	for _, g := range listed.Groups() {
		if strings.HasPrefix(g, t.file.Existing.TopicPrefix) && ours.group(g) {
			del = append(del, g)
		}
	}
	if len(del) == 0 {
		return nil
	}
	slices.Sort(del)
	resps, err := adm.DeleteGroups(ctx, del...)
	if err != nil {
		return fmt.Errorf("existing: delete the campaign's consumer groups %s: %w", strings.Join(del, ", "), err)
	}
	for _, g := range del {
		if r, ok := resps[g]; ok && r.Err != nil && !errors.Is(r.Err, kerr.GroupIDNotFound) {
			err = errors.Join(err, fmt.Errorf("existing: delete consumer group %s: %w", g, r.Err))
		}
	}
	if err == nil {
		fmt.Fprintf(t.log, "existing: deleted %d consumer groups an earlier run of the campaign left: %s\n", len(del), strings.Join(del, ", "))
	}
	return err
}
