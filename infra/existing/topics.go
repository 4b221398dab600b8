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

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// EventTopics is the infrastructure event that records the topics of a
// load before they are created: the campaign db then knows every topic xp
// made on the cluster, also those a killed run left.
const EventTopics = "topics"

// topicsEvent is an EventTopics event's outputs.
type topicsEvent struct {
	Run    string   `json:"run"`
	Topics []string `json:"topics"`
}

// newTopic names the topic (or the prefix of the topics, with more than
// one) of a load of row r and records the names in the campaign db: the
// topic prefix, the campaign, the run and 8 random hex digits.
func (t *Target) newTopic(ctx context.Context, r *planner.Row, n int) (string, error) {
	t.mu.Lock()
	events := t.events
	t.mu.Unlock()
	if events == nil {
		return "", errors.New("existing: no campaign db to record the load's topics in")
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	name := fmt.Sprintf("%s%s-%s-%s", t.file.Existing.TopicPrefix, r.Campaign, r.Run, hex.EncodeToString(rnd[:]))
	names := []string{name}
	if n > 1 {
		names = names[:0]
		for i := range n {
			names = append(names, fmt.Sprintf("%s-%d", name, i))
		}
	}
	out, _ := json.Marshal(topicsEvent{Run: r.Run, Topics: names})
	if _, err := events.AddInfraEvent(ctx, results.InfraEvent{Event: EventTopics, Time: time.Now(), Outputs: out}); err != nil {
		return "", fmt.Errorf("existing: record the topics of %s: %w", r.Run, err)
	}
	return name, nil
}

// recordedTopics are the topics events records; none without events.
func recordedTopics(ctx context.Context, events target.InfraEvents) (map[string]bool, error) {
	out := map[string]bool{}
	if events == nil {
		return out, nil
	}
	evs, err := events.InfraEvents(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range evs {
		if e.Event != EventTopics {
			continue
		}
		var te topicsEvent
		if json.Unmarshal(e.Outputs, &te) == nil {
			for _, n := range te.Topics {
				out[n] = true
			}
		}
	}
	return out, nil
}

// prefixed lists the cluster's topics under topic_prefix, through mode's
// endpoint: the names only (a Metadata request), never a record.
func (t *Target) prefixed(ctx context.Context, mode string) ([]string, error) {
	cl, err := t.client(mode)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the cluster's topics: %w", err)
	}
	var out []string
	for _, name := range td.Names() {
		if strings.HasPrefix(name, t.file.Existing.TopicPrefix) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// checkTopics refuses to start while topics under topic_prefix exist that
// the campaign's db does not record: they are someone else's (or another
// campaign's), and xp touches only its own.
func (t *Target) checkTopics(ctx context.Context, mode string, events target.InfraEvents) error {
	have, err := t.prefixed(ctx, mode)
	if err != nil {
		return err
	}
	ours, err := recordedTopics(ctx, events)
	if err != nil {
		return err
	}
	var foreign []string
	for _, n := range have {
		if !ours[n] {
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

// sweepTopics deletes the topics the campaign's db records that still
// exist (a killed run's, or every one after --keep); no other topic.
// t.mu is held.
func (t *Target) sweepTopics(ctx context.Context) error {
	if t.events == nil || t.cluster == nil {
		return nil
	}
	ours, err := recordedTopics(ctx, t.events)
	if err != nil || len(ours) == 0 {
		return err
	}
	have, err := t.prefixed(ctx, t.cluster.From)
	if err != nil {
		return err
	}
	var del []string
	for _, n := range have {
		if ours[n] {
			del = append(del, n)
		}
	}
	if len(del) == 0 {
		return nil
	}
	cl, err := t.client(t.cluster.From)
	if err != nil {
		return err
	}
	defer cl.Close()
	dctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	resps, err := kadm.NewClient(cl).DeleteTopics(dctx, del...)
	if err != nil {
		return fmt.Errorf("existing: delete the campaign's topics %s: %w", strings.Join(del, ", "), err)
	}
	for _, n := range del {
		if r, ok := resps[n]; ok && r.Err != nil {
			err = errors.Join(err, fmt.Errorf("existing: delete topic %s: %w", n, r.Err))
		}
	}
	if err == nil {
		fmt.Fprintf(t.log, "existing: deleted %d topics an earlier run of the campaign left: %s\n", len(del), strings.Join(del, ", "))
	}
	return err
}
