package runner

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one slice of a run's trials, for running it on N machines
// (an Indexed Job) and merging the parts (Merge): trial i of the run's
// expansion (every policy's trials, policy by policy) belongs to shard
// i mod N, and a soak's trial number n to shard n mod N. The slices are
// disjoint and their union is the unsharded run: the same trials with the
// same seeds. The zero Shard is the whole run.
type Shard struct {
	Index, Count int
}

// ParseShard parses "I/N" (0 ≤ I < N).
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("--shard %q: want I/N, e.g. 0/4 (shard I of N, 0 ≤ I < N)", s)
	}
	return NewShard(idx, cnt)
}

// NewShard returns shard index of count.
func NewShard(index, count int) (Shard, error) {
	if count < 1 || index < 0 || index >= count {
		return Shard{}, fmt.Errorf("shard %d/%d: want 0 ≤ I < N and N ≥ 1", index, count)
	}
	return Shard{Index: index, Count: count}, nil
}

// Owns reports whether the i-th trial belongs to this shard.
func (s Shard) Owns(i int) bool { return s.Count <= 1 || i%s.Count == s.Index }

// String is "I/N", or "" for the whole run.
func (s Shard) String() string {
	if s.Count <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// ShardOf returns the shard a command line asks for: --shard I/N, or
// --shards N with I from $JOB_COMPLETION_INDEX (a Kubernetes Indexed
// Job), or the whole run.
func ShardOf(shard string, shards int, getenv func(string) string) (Shard, error) {
	switch {
	case shard != "" && shards != 0:
		return Shard{}, fmt.Errorf("--shard and --shards: give one (--shards takes the index from $JOB_COMPLETION_INDEX)")
	case shard != "":
		return ParseShard(shard)
	case shards != 0:
		v := getenv("JOB_COMPLETION_INDEX")
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return Shard{}, fmt.Errorf("--shards %d: $JOB_COMPLETION_INDEX is %q, want the shard index (set by an Indexed Job; or use --shard I/N)", shards, v)
		}
		s, err := NewShard(i, shards)
		if err != nil {
			return Shard{}, fmt.Errorf("--shards %d with $JOB_COMPLETION_INDEX=%d: %v", shards, i, err)
		}
		return s, nil
	}
	return Shard{}, nil
}
