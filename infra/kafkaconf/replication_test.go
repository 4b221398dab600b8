package kafkaconf

import "testing"

// Unset, the replication factor is min(3, brokers) and
// min.insync.replicas min(2, that factor); set, each is taken as given.
func TestTopicReplication(t *testing.T) {
	for _, c := range []struct {
		rf, isr, brokers int
		wantRF, wantISR  int
	}{
		{0, 0, 1, 1, 1},
		{0, 0, 2, 2, 2},
		{0, 0, 5, 3, 2},
		{1, 0, 5, 1, 1},
		{0, 3, 5, 3, 3},
		{2, 1, 3, 2, 1},
		{-1, -1, 4, 3, 2},
	} {
		rf, isr := topicReplication(c.rf, c.isr, c.brokers)
		if rf != c.wantRF || isr != c.wantISR {
			t.Errorf("topicReplication(%d, %d, %d) = %d, %d; want %d, %d", c.rf, c.isr, c.brokers, rf, isr, c.wantRF, c.wantISR)
		}
	}
}
