package train

import "math/rand/v2"

// shuffled walks training documents in epochs of a seeded permutation, the
// way classify and extract draw their batches: the cursor (position and
// epoch) lives in the run's state so a resumed run draws the same batches.
type shuffled struct {
	rng   *rand.Rand
	order []int
	n     int
}

// next returns the index of the next document and advances pos (and
// epoch, re-permuting, at the end of an epoch).
func (s *shuffled) next(pos, epoch *int) int {
	if *pos == len(s.order) {
		s.order, *pos = s.rng.Perm(s.n), 0
		*epoch++
	}
	i := s.order[*pos]
	*pos++
	return i
}

// drawBatch takes documents from s until their tokens reach budget, and
// returns them with their token count.
func drawBatch[T any](s *shuffled, docs []T, tokens func(T) int, budget int, pos, epoch *int) ([]T, int) {
	var batch []T
	n := 0
	for n < budget {
		d := docs[s.next(pos, epoch)]
		batch = append(batch, d)
		n += tokens(d)
	}
	return batch, n
}

// microBatches cuts a batch into runs of consecutive documents of at most
// maxTokens tokens each (a longer document alone). The cut depends on the
// batch only, never on the worker count, so results do not either.
func microBatches(lens []int, maxTokens int) [][2]int {
	var mbs [][2]int
	for i := 0; i < len(lens); {
		j, t := i, 0
		for j < len(lens) && (j == i || t+lens[j] <= maxTokens) {
			t += lens[j]
			j++
		}
		mbs = append(mbs, [2]int{i, j})
		i = j
	}
	return mbs
}

// newShuffled is the document order of a run with n training documents:
// permutations drawn in turn from one seeded stream, the first epoch+1
// drawn already (a resumed run continues in the same permutation).
func newShuffled(seed, stream uint64, n, epoch int) *shuffled {
	s := &shuffled{rng: rand.New(rand.NewPCG(seed, stream)), n: n}
	s.order = s.rng.Perm(n)
	for range epoch {
		s.order = s.rng.Perm(n)
	}
	return s
}
