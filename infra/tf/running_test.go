package tf

import (
	"strings"
	"testing"
	"time"
)

// An abandoned apply's advice names the group, the tags every resource of
// the module carries, and the cloud CLI command that lists them.
func TestAbandonedAdvice(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		a    Abandoned
		want []string
	}{
		{Abandoned{Group: "aws m5 brokers=3", Op: "apply", PID: 42, Started: at, Platform: "aws", Campaign: "sec", Slug: "g1234abcd", Region: "eu-west-1"},
			[]string{"group aws m5 brokers=3: the terraform apply started 2025-03-01T12:00:00Z by xp (pid 42) was abandoned",
				"aws resourcegroupstaggingapi get-resources --region eu-west-1 --tag-filters Key=xp:campaign,Values=sec Key=xp:group,Values=g1234abcd"}},
		{Abandoned{Group: "g", Op: "destroy", Platform: "azure", Campaign: "sec", Slug: "g1234abcd"},
			[]string{"terraform destroy", `az resource list --tag xp-group=g1234abcd --query "[?tags.\"xp-campaign\"=='sec']"`, "az group delete --name xp-sec-g1234abcd"}},
		{Abandoned{Group: "g", Platform: "hosts"}, []string{"terraform apply", "platform hosts creates nothing in a cloud"}},
	} {
		got := tc.a.Advice()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s advice lacks %q:\n%s", tc.a.Platform, w, got)
			}
		}
	}
}
