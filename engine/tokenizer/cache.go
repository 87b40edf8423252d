package tokenizer

import (
	"strings"
	"sync"
)

// Word caching has two levels. wordCache is shared by all goroutines: 64
// RW-locked map shards, bounded (a full shard is emptied; frequent words
// come back at once). In front of it every scratch (one per goroutine at a
// time) has a small direct-mapped l1 of pointers into the shared entries:
// a hit costs one hash and one string compare, with no lock, no atomic and
// no cache line shared between cores.
type wordCache struct {
	shards [cacheShards]cacheShard
}

// cacheEntry is one cached piece; l1 slots point at it.
type cacheEntry struct {
	key string
	ids []int32
}

const (
	cacheShards   = 64
	cacheShardCap = 8192
	l1Size        = 4096 // power of two
)

type cacheShard struct {
	mu sync.RWMutex
	m  map[string]*cacheEntry
	_  [40]byte // keep shards on separate cache lines
}

func newWordCache() *wordCache {
	c := &wordCache{}
	for i := range c.shards {
		c.shards[i].m = make(map[string]*cacheEntry)
	}
	return c
}

// pieceHash is FNV-1a: pieces are short, so this is a few nanoseconds.
func pieceHash(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

func (c *wordCache) shard(h uint32) *cacheShard {
	return &c.shards[(h>>16)%cacheShards]
}

// lookup returns the ids of key from the scratch's l1 or the shared cache.
func (c *wordCache) lookup(sc *scratch, key string, h uint32) ([]int32, bool) {
	slot := &sc.l1[h&(l1Size-1)]
	if e := *slot; e != nil && e.key == key {
		return e.ids, true
	}
	s := c.shard(h)
	s.mu.RLock()
	e, ok := s.m[key]
	s.mu.RUnlock()
	if !ok {
		return nil, false
	}
	*slot = e
	return e.ids, true
}

// store caches a copy of ids under key (cloned: never pin the caller's text).
func (c *wordCache) store(sc *scratch, key string, h uint32, ids []int32) {
	e := &cacheEntry{key: strings.Clone(key), ids: append([]int32(nil), ids...)}
	s := c.shard(h)
	s.mu.Lock()
	if len(s.m) >= cacheShardCap {
		clear(s.m)
	}
	s.m[e.key] = e
	s.mu.Unlock()
	sc.l1[h&(l1Size-1)] = e
}
