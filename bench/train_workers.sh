#!/usr/bin/env bash
# train_workers.sh: `onecore train pretrain` tokens/s with --workers 2 on
# cores 0,1 vs --workers 1 on core 1, alternated (ROUNDS rounds of each, SECS
# seconds per run) for dense-3m and train/recipes/small.json, on the Go
# net/http sources (issue 13). Throughput is measured between the first
# and last periodic log line of a run, so start-up and the final eval do
# not count.
#
#   bash bench/train_workers.sh            # ROUNDS=2 SECS=60 by default
set -euo pipefail
ROUNDS=${ROUNDS:-2}
SECS=${SECS:-60}
BIN=${BIN:-/tmp/onecore-bench}
DATA=${DATA:-/usr/local/go/src/net/http}
cd "$(dirname "$0")/.."
go build -o "$BIN" ./cmd/onecore
# Priority when permitted: nice -10 for the runs, and -10 for this
# session's autogroup (with kernel.sched_autogroup_enabled, nice only ranks
# processes within one session; other sessions share the cores by group).
NICE="nice -n -10"
$NICE true 2>/dev/null || NICE=""
if [ -w /proc/self/autogroup ]; then
	echo -10 >/proc/self/autogroup 2>/dev/null || true
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rate() { # tokens/s between the first and the last "train" log line
	grep 'msg=train ' "$1" | awk '{
		split($1, a, "T"); split(a[2], h, ":"); sub("Z", "", h[3]); t = h[1]*3600 + h[2]*60 + h[3]
		for (i = 1; i <= NF; i++) if ($i ~ /^tokens=/) { split($i, kv, "="); tok = kv[2] }
		if (n == 0) { t0 = t; k0 = tok } ; t1 = t; k1 = tok; n++
	} END { if (n > 1) printf "%.0f", (k1 - k0) / (t1 - t0); else print "?" }'
}
for cfg in ${CONFIGS:-dense-3m train/recipes/small.json}; do
	for r in $(seq "$ROUNDS"); do
		for w in 2 1; do
			cpus=0,1
			[ "$w" = 1 ] && cpus=1
			dir="$out/run"
			rm -rf "$dir"
			load=$(cut -d' ' -f1-3 /proc/loadavg)
			timeout -s INT "$SECS" $NICE taskset -c "$cpus" "$BIN" train pretrain --config "$cfg" --data "$DATA" \
				--tokenizer models/spam/tokenizer.json --out "$dir" --batch 16 --seq-len 256 --tokens 1000000000 \
				--eval-every 0 --ckpt-every 0 --log-every 5 --workers "$w" 2>"$out/log" || true
			printf '%-28s round %d  --workers %d (cpus %s)  %6s tok/s  load %s\n' "$cfg" "$r" "$w" "$cpus" "$(rate "$out/log")" "$load"
		done
	done
done
