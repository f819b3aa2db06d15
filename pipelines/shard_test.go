package pipelines

import (
	"fmt"
	"testing"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Shard
		wantErr bool
	}{
		{"0/4", Shard{0, 4}, false},
		{"3/4", Shard{3, 4}, false},
		{" 1 / 2 ", Shard{1, 2}, false},
		{"4/4", Shard{}, true},
		{"-1/4", Shard{}, true},
		{"1/0", Shard{}, true},
		{"0/0", Shard{}, true}, // the zero Shard means all; written, it is a mistake
		{"0/1", Shard{0, 1}, false},
		{"a/b", Shard{}, true},
		{"3", Shard{}, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseShard(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseShard(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("ParseShard(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// TestShardPartition: the shards of n are disjoint, cover every input, are
// roughly balanced, and a scene stays in its shard when other inputs change.
func TestShardPartition(t *testing.T) {
	var in []Input
	for i := 0; i < 1000; i++ {
		in = append(in, Input{Name: fmt.Sprintf("/data/scene%04d.tif", i), Key: fmt.Sprintf("scene%04d", i)})
	}
	for _, n := range []int{1, 2, 3, 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			owner := map[string]int{}
			for i := 0; i < n; i++ {
				sel := Shard{i, n}.Select(in)
				if len(sel) < len(in)/n/2 || len(sel) > 2*len(in)/n+1 {
					t.Errorf("shard %d/%d got %d of %d inputs, want about %d", i, n, len(sel), len(in), len(in)/n)
				}
				for _, x := range sel {
					if prev, ok := owner[x.Key]; ok {
						t.Fatalf("%s in shards %d and %d", x.Key, prev, i)
					}
					owner[x.Key] = i
				}
			}
			if len(owner) != len(in) {
				t.Fatalf("shards cover %d inputs, want %d", len(owner), len(in))
			}
			// Stability: dropping half of the inputs moves no scene.
			for i := 0; i < n; i++ {
				for _, x := range (Shard{i, n}).Select(in[:500]) {
					if owner[x.Key] != i {
						t.Fatalf("%s moved from shard %d to %d", x.Key, owner[x.Key], i)
					}
				}
			}
		})
	}
}
