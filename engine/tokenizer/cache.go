package tokenizer

import (
	"strings"
	"sync"
)

// wordCache maps pre-tokenized pieces to their ids. It is sharded so that
// many goroutines encoding at once rarely touch the same lock, and bounded:
// a full shard is emptied (cheap, and frequent words come back at once).
type wordCache struct {
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
	c := &wordCache{}
	for i := range c.shards {
		c.shards[i].m = make(map[string][]int32)
	}
	return c
}

// shard picks a shard from the length and the first and last bytes: much
// cheaper than hashing the key twice (the map hashes it again).
func (c *wordCache) shard(key string) *cacheShard {
	h := uint(len(key)) * 0x9E3779B1
	if len(key) > 0 {
		h ^= uint(key[0])*0x85EBCA77 ^ uint(key[len(key)-1])*0xC2B2AE3D
		h ^= uint(key[len(key)/2]) * 0x27D4EB2F
	}
	return &c.shards[(h>>7)%cacheShards]
}

func (c *wordCache) get(key string) ([]int32, bool) {
	s := c.shard(key)
	s.mu.RLock()
	v, ok := s.m[key]
	s.mu.RUnlock()
	return v, ok
}

// put stores a copy of ids under key and returns the copy.
func (c *wordCache) put(key string, ids []int32) []int32 {
	v := make([]int32, len(ids))
	copy(v, ids)
	s := c.shard(key)
	s.mu.Lock()
	if len(s.m) >= cacheShardCap {
		clear(s.m)
	}
	s.m[strings.Clone(key)] = v // never pin the caller's text
	s.mu.Unlock()
	return v
}
