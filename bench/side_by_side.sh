#!/usr/bin/env bash
# Runs the Go engine / trainer and the PyTorch baselines on the same pinned
# core, alternating A B A B so load drift on a shared machine hits both, and
# prints each pair's numbers (tokens per CPU-second) and their ratio. Usage:
#   bench/side_by_side.sh [prefill|train|all] [CPU]     (default: all, CPU 1)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
cpu=${2:-1}
py=/usr/bin/python3
bin=$(mktemp -d)/onecore
go build -o "$bin" ./cmd/onecore

ratio() { $py -c "import sys; print(f'{float(sys.argv[1])/float(sys.argv[2]):.2f}')" "$1" "$2"; }
field() { $py -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])" "$1"; }

if [[ $what == prefill || $what == all ]]; then
  for model in dense moe; do
    preset=dense-3m; flag=""
    [[ $model == moe ]] && preset=moe-3m && flag=--moe
    for round in 1 2; do
      g=$("$bin" bench engine --config $preset --cpu "$cpu" --json)
      t=$(taskset -c "$cpu" $py bench/torch_prefill.py $flag)
      gb=$(field prefill_tok_s <<<"$g"); gr=$(field prefill_readout_tok_s <<<"$g")
      # both sides in tokens per CPU-second (onecore: the pinned thread's CPU time;
      # PyTorch: its process CPU time), so load on a shared machine cancels out
      tb=$(field prefill_cpu_tok_s <<<"$t"); tr=$(field prefill_readout_cpu_tok_s <<<"$t")
      echo "prefill $model round $round: go body $gb tok/s, torch body $tb tok/s, ratio $(ratio "$gb" "$tb"); go+readout $gr, torch+readout $tr, ratio $(ratio "$gr" "$tr")"
    done
  done
fi

if [[ $what == train || $what == all ]]; then
  tbin=$(dirname "$bin")/train.test
  go test -c -o "$tbin" ./train
  metric() { awk -v m="$1" '{for (i=1;i<NF;i++) if ($(i+1)==m) print $i}'; }
  for model in Dense MoE; do
    flag=""; [[ $model == MoE ]] && flag=--moe
    for round in 1 2; do
      # same shape on both sides: 16 rows x 256 tokens, 512 sampled negatives
      g=$(GOMAXPROCS=1 taskset -c "$cpu" "$tbin" -test.run '^$' -test.bench "BenchmarkTrainStep$model\$" -test.benchtime 3x)
      gw=$(metric tok/s <<<"$g"); gc=$(metric tok/cpu-s <<<"$g")
      t=$(taskset -c "$cpu" $py bench/torch_train.py $flag --steps 3)
      tw=$(field train_tok_s <<<"$t"); tc=$(field train_tok_cpu_s <<<"$t")
      echo "train $model round $round: go $gc tok/cpu-s ($gw wall), torch $tc tok/cpu-s ($tw wall), ratio $(ratio "$gc" "$tc") (wall $(ratio "$gw" "$tw"))"
    done
  done
fi
