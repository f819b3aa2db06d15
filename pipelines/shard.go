package pipelines

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Shard selects a deterministic share of the inputs: input k belongs to shard
// Index when hash(k) mod Count == Index (0-based Index). The zero Shard (Count
// 0) selects everything. Hashing the scene's product key, rather than taking
// every n-th input, keeps a scene in the same shard when other inputs appear
// or disappear between runs, so a rerun after new data arrived does not move
// finished scenes to another worker.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/n" (0 <= i < n, so n >= 1: "0/0" is refused, though
// the zero Shard selects everything).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT, e.g. 0/4", s)
	}
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT with integers, e.g. 0/4", s)
	}
	if n < 1 {
		return Shard{}, fmt.Errorf("shard %q: want a count of at least 1, e.g. 0/4", s)
	}
	sh := Shard{Index: i, Count: n}
	return sh, sh.Validate()
}

// Validate checks 0 <= Index < Count (or the zero Shard).
func (s Shard) Validate() error {
	if s.Count == 0 && s.Index == 0 {
		return nil
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard %d/%d: want 0 <= index < count", s.Index, s.Count)
	}
	return nil
}

// String is "i/n", or "all".
func (s Shard) String() string {
	if s.Count == 0 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Has reports whether the scene with product key belongs to this shard.
func (s Shard) Has(key string) bool {
	if s.Count <= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()%uint64(s.Count) == uint64(s.Index)
}

// Select keeps the inputs of this shard, in order.
func (s Shard) Select(in []Input) []Input {
	var out []Input
	for _, x := range in {
		if s.Has(x.Key) {
			out = append(out, x)
		}
	}
	return out
}
