package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync"
)

// wordCache maps pre-tokenized pieces to their ids. It is sharded so that
// many goroutines encoding at once rarely touch the same lock, and bounded:
// a full shard is emptied (cheap, and frequent words come back at once).
type wordCache struct {
	seed   maphash.Seed
	shards [cacheShards]cacheShard
}

const (
	cacheShards   = 64
	cacheShardCap = 8192
)

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
	_  [40]byte // keep shards on separate cache lines
}

func newWordCache() *wordCache {
	c := &wordCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].m = make(map[string][]int32)
	}
	return c
}

func (c *wordCache) shard(key string) *cacheShard {
	return &c.shards[maphash.String(c.seed, key)%cacheShards]
}

func (c *wordCache) get(key string) ([]int32, bool) {
	s := c.shard(key)
	s.mu.RLock()
	v, ok := s.m[key]
	s.mu.RUnlock()
	return v, ok
}

func (c *wordCache) put(key string, ids []int32) {
	v := make([]int32, len(ids))
	copy(v, ids)
	s := c.shard(key)
	s.mu.Lock()
	if len(s.m) >= cacheShardCap {
		clear(s.m)
	}
	s.m[strings.Clone(key)] = v // never pin the caller's text
	s.mu.Unlock()
}
