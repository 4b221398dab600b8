package loadgen

import (
	"os"
	"strings"
	"testing"

	"github.com/xp-bench/xp/planner"
)

// TestFranzGoInfo: the Go client names franz-go at the module version
// go.mod requires (test binaries carry no module list, so this checks the
// fallback franzGoVersion too) and the Go release it runs on.
func TestFranzGoInfo(t *testing.T) {
	c := franzGoInfo()
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimPrefix(c.Version, "franz-go ")
	if c.Name != planner.ClientFranzGo || !strings.Contains(string(mod), franzGoModule+" "+v+"\n") {
		t.Errorf("%+v: want franz-go at go.mod's version (update franzGoVersion in result.go)", c)
	}
	if !strings.HasPrefix(c.Runtime, "go1.") || !strings.Contains(c.Runtime, "GOMAXPROCS") {
		t.Errorf("runtime %q: want the Go release and GOMAXPROCS", c.Runtime)
	}
}

// TestValidateClient: the client is one xp runs; librdkafka is refused by
// name with the reason; java needs its release.
func TestValidateClient(t *testing.T) {
	base := Config{Bootstrap: []string{"127.0.0.1:9"}, ClientConfig: map[string]string{}}
	tests := []struct {
		name, client, javaClient, want string
	}{
		{"franz-go", planner.ClientFranzGo, "", ""},
		{"default", "", "", ""},
		{"java", planner.ClientJava, "out/dist/xp-java-client-4.4.0.tgz", ""},
		{"java without its release", planner.ClientJava, "", "--client java needs --java-client"},
		{"librdkafka", planner.ClientLibrdkafka, "", "--client librdkafka is refused: xp has no librdkafka load generator yet"},
		{"unknown", "sarama", "", `--client "sarama": want franz-go or java`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Client, c.JavaClient = tc.client, tc.javaClient
			err := c.WithDefaults().Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
