package jobs

import (
	"fmt"
	"strconv"
)

// Placement is this process's rank among World cooperating processes, and
// where that came from (for logs).
type Placement struct {
	Rank, World int
	From        string
}

// ResolvePlacement decides rank and world, first match wins:
//  1. the --rank/--world flags (rank < 0 / world ≤ 0 mean "not given");
//  2. a Slurm job array: SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN of
//     SLURM_ARRAY_TASK_COUNT (world may still be forced by --world);
//  3. a Slurm multi-task step: SLURM_PROCID of SLURM_NTASKS;
//  4. a Kubernetes Indexed Job: JOB_COMPLETION_INDEX, with --world required
//     (Kubernetes does not expose completions to the pod);
//  5. rank 0 of 1.
//
// getenv is os.Getenv in production, a map in tests.
func ResolvePlacement(rank, world int, getenv func(string) string) (Placement, error) {
	p, err := resolve(rank, world, getenv)
	if err != nil {
		return p, err
	}
	if p.World < 1 || p.Rank < 0 || p.Rank >= p.World {
		return p, fmt.Errorf("rank %d of world %d (from %s): need 0 ≤ rank < world", p.Rank, p.World, p.From)
	}
	return p, nil
}

func resolve(rank, world int, getenv func(string) string) (Placement, error) {
	num := func(name string) (int, bool, error) {
		s := getenv(name)
		if s == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, false, fmt.Errorf("$%s=%q: not an integer", name, s)
		}
		return n, true, nil
	}
	if rank >= 0 {
		if world <= 0 {
			return Placement{}, fmt.Errorf("--rank %d given without --world", rank)
		}
		return Placement{rank, world, "flags"}, nil
	}
	if id, ok, err := num("SLURM_ARRAY_TASK_ID"); err != nil {
		return Placement{}, err
	} else if ok {
		min, _, err := num("SLURM_ARRAY_TASK_MIN")
		if err != nil {
			return Placement{}, err
		}
		count, ok, err := num("SLURM_ARRAY_TASK_COUNT")
		if err != nil {
			return Placement{}, err
		}
		if world > 0 {
			count, ok = world, true
		}
		if !ok {
			return Placement{}, fmt.Errorf("$SLURM_ARRAY_TASK_ID set without $SLURM_ARRAY_TASK_COUNT: pass --world")
		}
		return Placement{id - min, count, "slurm array"}, nil
	}
	if id, ok, err := num("SLURM_PROCID"); err != nil {
		return Placement{}, err
	} else if ok {
		n, ok, err := num("SLURM_NTASKS")
		if err != nil {
			return Placement{}, err
		}
		if world > 0 {
			n, ok = world, true
		}
		if !ok {
			return Placement{}, fmt.Errorf("$SLURM_PROCID set without $SLURM_NTASKS: pass --world")
		}
		return Placement{id, n, "slurm tasks"}, nil
	}
	if id, ok, err := num("JOB_COMPLETION_INDEX"); err != nil {
		return Placement{}, err
	} else if ok {
		if world <= 0 {
			return Placement{}, fmt.Errorf("$JOB_COMPLETION_INDEX=%d (Kubernetes Indexed Job) needs --world (the Job's completions)", id)
		}
		return Placement{id, world, "kubernetes indexed job"}, nil
	}
	if world > 0 {
		return Placement{}, fmt.Errorf("--world %d given without --rank (and no Slurm/Kubernetes index in the environment)", world)
	}
	return Placement{0, 1, "default"}, nil
}

// Assign returns the indices (into a sorted shard list of n shards) that
// rank owns: round robin, shard i to rank i mod world. Deterministic for a
// given listing, so every rank of an array computes the same partition
// without talking to the others, and the ranks' shares differ by at most one.
func Assign(n int, p Placement) []int {
	var idx []int
	for i := p.Rank; i < n; i += p.World {
		idx = append(idx, i)
	}
	return idx
}
