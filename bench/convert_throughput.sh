#!/usr/bin/env bash
# Throughput of `onecore convert` on one big shard (issue 4 acceptance):
# JSONL.zst → Parquet and Parquet → Parquet, on one core (taskset -c $CPU)
# and on two (taskset -c $CPUS), each run under /usr/bin/time -v. Prints,
# per run, MB/s of input text (10^6 bytes of text per wall second), CPU%,
# user+sys seconds and peak RSS, then the 2-core speedup per case.
#
# Usage: bench/convert_throughput.sh [DIR]
#   DIR         where data and outputs go (default /tmp/onecore-convert-bench);
#               needs ~2.5 GB free. The data is generated once (deterministic:
#               same bytes on every machine) and reused by later runs.
# Environment:
#   TEXT_MB=1024   text to generate, in MiB (≥ 1 GiB for the acceptance)
#   ROUNDS=1       rounds of every case
#   CPU=1          the core for one-core runs
#   CPUS=0,1       the cores for two-core runs ("" skips them)
#   BASE=path      also run this onecore binary (e.g. an older build),
#                  alternating with ours run by run, for a side-by-side A/B
#   ONECORE=path   the binary to measure (default: built from this checkout)
#   KEEP=url,lang,score  passthrough columns (--keep)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-/tmp/onecore-convert-bench}
text_mb=${TEXT_MB:-1024}
rounds=${ROUNDS:-1}
cpu1=${CPU:-1}
cpus2=${CPUS-0,1}
keep=${KEEP-url,lang,score}
mkdir -p "$dir"

bin=${ONECORE:-}
if [[ -z $bin ]]; then
	bin=$dir/onecore
	(cd "$repo" && go build -o "$bin" ./cmd/onecore)
fi

data=$dir/data-$text_mb
if [[ ! -f $data/done ]]; then
	mkdir -p "$data"
	echo "generating $text_mb MiB of text in $data ..." >&2
	# Documents of 60–280 words drawn from a 30k-word vocabulary with Zipf
	# frequencies (a few unicode words and JSON escapes among them): zstd
	# compresses it about 3.3×, like real web text.
	python3 - "$data/gen.jsonl" "$text_mb" >"$data/text_bytes" <<'EOF'
import array, json, operator, random, sys
out, target = sys.argv[1], int(sys.argv[2]) << 20
rng = random.Random(20261202)
letters = "etaoinshrdlcumwfgypbvkjxqz"
lw = [12,9,8,8,7,7,6,6,6,4,4,3,3,2,2,2,2,2,1,1,1,1,1,1,1,1]
vocab = set()
while len(vocab) < 30000:
    n = min(14, 1 + int(rng.expovariate(1/5.0)))
    vocab.add("".join(rng.choices(letters, weights=lw, k=n)))
vocab = sorted(vocab)
rng.shuffle(vocab)
vocab[100:110] = ["naïve", "café", "Straße", "日本語", "ελληνικά", "русский", "🙂", "👩‍💻", "\"quoted\"", "tab\there"]
# Zipf-like word frequencies as a 65536-slot table, drawn with random bytes
# and itemgetter so that the generator runs at C speed.
w = [1.0 / (r + 1) ** 1.05 for r in range(len(vocab))]
scale = (1 << 16) / sum(w)
table = []
for word, x in zip(vocab, w):
    table.extend([word] * max(1, round(x * scale)))
table = table[:1 << 16]
langs = ["en", "de", "fr", "es", "ja", "ru", "zh", "it"]
text_bytes = 0
i = 0
pool, pos = [], 0
with open(out, "w", encoding="utf-8") as f:
    while text_bytes < target:
        n = rng.randint(60, 280)
        if len(pool) - pos < n:
            pool, pos = list(operator.itemgetter(*array.array("H", rng.randbytes(1 << 19)))(table)), 0
        words, pos = pool[pos:pos + n], pos + n
        parts = []
        for j in range(0, n, 12):
            s = " ".join(words[j:j + 12])
            parts.append(s[:1].upper() + s[1:] + ".")
        text = " ".join(parts)
        if i % 7 == 0:
            text = text.replace(". ", ".\n\n", 2)
        rec = {"id": "doc-%09d" % i, "text": text, "url": "https://example.org/%s/%d" % (words[0], i),
               "lang": langs[i % 8], "score": round(rng.random(), 4)}
        f.write(json.dumps(rec, ensure_ascii=False))
        f.write("\n")
        text_bytes += len(text.encode("utf-8"))
        i += 1
print(text_bytes)
EOF
	"$bin" convert --in "$data/gen.jsonl" --out "$data/in.jsonl.zst" --keep url,lang,score >/dev/null
	"$bin" convert --in "$data/gen.jsonl" --out "$data/in.parquet" --keep url,lang,score >/dev/null
	rm "$data/gen.jsonl"
	touch "$data/done"
fi
text_bytes=$(cat "$data/text_bytes")
echo "input: $((text_bytes / 1000000)) MB of text; $(du -m "$data/in.jsonl.zst" | cut -f1) MiB JSONL.zst, $(du -m "$data/in.parquet" | cut -f1) MiB Parquet" >&2

bins=(new)
declare -A path=([new]=$bin)
if [[ -n ${BASE:-} ]]; then
	bins=(base new)
	path[base]=$BASE
fi
cores=("$cpu1")
[[ -n $cpus2 ]] && cores+=("$cpus2")

declare -A best
printf '%-5s %-22s %-6s %9s %8s %6s %9s %8s\n' bin case cores wall_s MB/s CPU% cpu_s RSS_MB
for ((r = 0; r < rounds; r++)); do
	for c in jsonlzst parquet; do
		in=$data/in.jsonl.zst
		[[ $c == parquet ]] && in=$data/in.parquet
		for cs in "${cores[@]}"; do
			for b in "${bins[@]}"; do
				out=$dir/out-$b.parquet
				rm -f "$out"
				log=$dir/time.log
				args=(convert --in "$in" --out "$out" --json)
				[[ -n $keep ]] && args+=(--keep "$keep")
				/usr/bin/time -v -o "$log" taskset -c "$cs" "${path[$b]}" "${args[@]}" >/dev/null
				wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$log")
				cpu=$(awk -F': ' '/Percent of CPU/ {print $2}' "$log")
				cpus=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$log")
				rss=$(awk -F': ' '/Maximum resident set size/ {printf "%d", $2 / 1024}' "$log")
				mbs=$(awk -v b="$text_bytes" -v w="$wall" 'BEGIN {printf "%.1f", b / 1e6 / w}')
				ncores=$(($(tr -cd , <<<"$cs" | wc -c) + 1))
				name=$([[ $c == parquet ]] && echo "parquet->parquet" || echo "jsonl.zst->parquet")
				printf '%-5s %-22s %-6s %9.2f %8s %6s %9s %8s\n' "$b" "$name" "$ncores" "$wall" "$mbs" "$cpu" "$cpus" "$rss"
				k=$b/$c/$ncores
				if [[ -z ${best[$k]:-} ]] || awk -v a="$wall" -v b="${best[$k]}" 'BEGIN {exit !(a < b)}'; then
					best[$k]=$wall
				fi
			done
		done
	done
done
rm -f "$dir"/out-*.parquet
if [[ -n $cpus2 ]]; then
	for b in "${bins[@]}"; do
		for c in jsonlzst parquet; do
			awk -v b="$b" -v c="$c" -v one="${best[$b/$c/1]}" -v two="${best[$b/$c/2]}" \
				'BEGIN {printf "%s %s: 2-core speedup %.2f× (best wall %.2f s → %.2f s)\n", b, c, one / two, one, two}'
		done
	done
fi
