package planner

import (
	"slices"
	"testing"
)

func TestGroupByInfra(t *testing.T) {
	row := func(run string, order, brokers int) Row {
		return Row{Run: run, Order: order, Platform: "aws", Brokers: brokers}
	}
	runs := func(groups [][]Row) [][]string {
		var out [][]string
		for _, g := range groups {
			var rs []string
			for _, r := range g {
				rs = append(rs, r.Run)
			}
			out = append(out, rs)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		rows []Row
		want [][]string
	}{
		{name: "empty", rows: nil, want: nil},
		{name: "one group", rows: []Row{row("a", 1, 3), row("b", 2, 3)}, want: [][]string{{"a", "b"}}},
		{name: "groups in order of their first row",
			rows: []Row{row("a", 1, 3), row("b", 2, 5), row("c", 3, 3), row("d", 4, 5)},
			want: [][]string{{"a", "c"}, {"b", "d"}}},
		{name: "sorted by order, not file order",
			rows: []Row{row("d", 4, 5), row("c", 3, 3), row("b", 2, 5), row("a", 1, 3)},
			want: [][]string{{"a", "c"}, {"b", "d"}}},
		{name: "equal orders keep their place",
			rows: []Row{row("x", 1, 3), row("y", 1, 3), row("z", 0, 5)},
			want: [][]string{{"z"}, {"x", "y"}}},
		{name: "every infrastructure field splits",
			rows: []Row{row("a", 1, 3), {Run: "b", Order: 2, Platform: "aws", Brokers: 3, Gateways: 2},
				{Run: "c", Order: 3, Platform: "aws", Brokers: 3, GatewayKind: GatewayKindKroxylicious},
				{Run: "d", Order: 4, Platform: "aws", Brokers: 3, KafkaVersion: "4.1.0"},
				{Run: "e", Order: 5, Platform: "aws", Brokers: 3, InstanceType: "m5.large"},
				{Run: "f", Order: 6, Platform: "azure", Brokers: 3},
				// security is no infrastructure: same group as a
				{Run: "g", Order: 7, Platform: "aws", Brokers: 3, Security: SecurityTLS}},
			want: [][]string{{"a", "g"}, {"b"}, {"c"}, {"d"}, {"e"}, {"f"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.rows)
			got := GroupByInfra(tc.rows)
			if g := runs(got); !slices.EqualFunc(g, tc.want, slices.Equal) {
				t.Errorf("GroupByInfra = %v, want %v", g, tc.want)
			}
			for _, g := range got {
				for _, r := range g {
					if r.InfraKey() != g[0].InfraKey() {
						t.Errorf("group of %s holds %s with another InfraKey", g[0].Run, r.Run)
					}
				}
			}
			if !slices.EqualFunc(in, tc.rows, func(a, b Row) bool { return a.Run == b.Run }) {
				t.Error("GroupByInfra reordered its argument")
			}
		})
	}
}
