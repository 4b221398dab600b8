package kafkaconf

import (
	"strings"
	"testing"
)

func TestServerCommand(t *testing.T) {
	for _, tc := range []struct {
		name, heap string
		want       []string
	}{
		{"kafka's heap", "", []string{"env", "LOG_DIR=/home/ubuntu/xp/c1/kafka-1/logs",
			"/home/ubuntu/xp/c1/kafka-1/kafka-3.9.1/bin/kafka-server-start.sh", "/home/ubuntu/xp/c1/kafka-1/server.properties"}},
		{"a heap", "-Xmx2048m -Xms2048m", []string{"env", "LOG_DIR=/home/ubuntu/xp/c1/kafka-1/logs", "KAFKA_HEAP_OPTS=-Xmx2048m -Xms2048m",
			"/home/ubuntu/xp/c1/kafka-1/kafka-3.9.1/bin/kafka-server-start.sh", "/home/ubuntu/xp/c1/kafka-1/server.properties"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := testInstall()
			in.HeapOpts = tc.heap
			got, err := in.ServerCommand()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	in := testInstall()
	in.HeapOpts = "-Xmx1g; rm -rf /"
	if _, err := in.ServerCommand(); err == nil || !strings.Contains(err.Error(), "kafka heap options") {
		t.Errorf("heap options with a shell command: %v", err)
	}
}
