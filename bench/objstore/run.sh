#!/usr/bin/env bash
# Object storage against local disk, side by side in one run (issue 17's
# measured acceptance), with a real S3 server (versitygw, `make deps`)
# started on loopback for the run:
#
#   1. convert: one big Parquet shard (BIG_MB MiB of text, default 2048)
#      local -> local directory vs s3:// -> s3:// (ranged reads in,
#      multipart uploads out): MB/s of text and peak RSS of each;
#   2. extract (the bundled spam classifier, --max-tokens 256): SHARDS
#      small JSONL shards, local -> local vs s3:// -> s3://: docs/s;
#   3. elastic workers: 3 processes on the s3 corpus of 2., one of them
#      slowed (SIGSTOP/SIGCONT, running SLOW_DUTY percent of the time),
#      once as 3 static ranks (--rank/--world) and once as 3 workers
#      sharing the corpus by leases: wall time until every shard is done.
#
# The S3 server runs on the same cores as onecore, so its CPU time is part
# of the s3 numbers (a real object store would be another machine).
#
# Usage: bench/objstore/run.sh [DIR]     (default /tmp/onecore-objstore)
#   BIG_MB=2048  SHARDS=24  ROUNDS=2 (alternating local/s3 rounds of 1. and
#   2.)  CASES="1 2 3" (which of them)  CPUS=0,1 (onecore's cores)  SERVER_CPUS=$CPUS (the
#   S3 server's: e.g. CPUS=1 SERVER_CPUS=0 gives onecore one core of its own
#   both ways)  SLOW_DUTY=25  ONECORE=path (default:
#   built from this checkout)  VERSITYGW=path (default: $PATH, GOBIN,
#   GOPATH/bin)  KEEPALIVE=1 (0: the server closes every connection after
#   one request, versitygw's default; object stores in production keep
#   connections open)  TLS=0 (1: HTTPS with a self-signed certificate made
#   by openssl, as real endpoints are; the SDK then sends unsigned payloads
#   instead of hashing them for SigV4)  LATENCY_MS=0 (N: every request goes
#   through bench/objstore/latencyproxy, which holds it N ms first, as a
#   real store's time to first byte; plain HTTP only)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-/tmp/onecore-objstore}
big_mb=${BIG_MB:-2048}
shards=${SHARDS:-24}
rounds=${ROUNDS:-2}
cases=" ${CASES:-1 2 3} "
cpus=${CPUS:-0,1}
duty=${SLOW_DUTY:-25}
server_cpus=${SERVER_CPUS:-$cpus}
mkdir -p "$dir"

bin=${ONECORE:-}
if [[ -z $bin ]]; then
	bin=$dir/onecore
	(cd "$repo" && go build -o "$bin" ./cmd/onecore)
fi
vgw=${VERSITYGW:-$(command -v versitygw || true)}
if [[ -z $vgw ]]; then
	gobin=$(go env GOBIN)
	[[ -n $gobin ]] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
	vgw=$gobin/versitygw
fi
[[ -x $vgw ]] || { echo "versitygw not found: make deps (scripts/test-deps.sh)" >&2; exit 1; }

# the S3 server: a fresh folder per run, root keys in its environment
store=$dir/store
rm -rf "$store" && mkdir -p "$store/bench"
port=$((20000 + RANDOM % 20000))
vgw_flags=(--quiet) # no line per request on the server's stdout
[[ ${KEEPALIVE:-1} == 1 ]] && vgw_flags+=(--keep-alive)
scheme=http
if [[ ${TLS:-0} == 1 ]]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null
	vgw_flags+=(--cert "$dir/cert.pem" --key "$dir/key.pem")
	scheme=https
	export AWS_CA_BUNDLE=$dir/cert.pem
fi
ROOT_ACCESS_KEY=bench ROOT_SECRET_KEY=benchsecret taskset -c "$server_cpus" "$vgw" --port "127.0.0.1:$port" "${vgw_flags[@]}" posix "$store" >"$dir/versitygw.log" 2>&1 &
vgw_pid=$!
trap 'kill $vgw_pid 2>/dev/null || true' EXIT
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=benchsecret AWS_ENDPOINT_URL=$scheme://127.0.0.1:$port AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
echo "S3 server: versitygw ${vgw_flags[*]} at $AWS_ENDPOINT_URL, cores $server_cpus"
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
latency=${LATENCY_MS:-0}
if ((latency > 0)); then
	[[ $scheme == http ]] || { echo "LATENCY_MS needs TLS=0" >&2; exit 1; }
	(cd "$repo" && go build -o "$dir/latencyproxy" ./bench/objstore/latencyproxy)
	taskset -c "$server_cpus" "$dir/latencyproxy" -target "$AWS_ENDPOINT_URL" -delay "${latency}ms" >"$dir/latencyproxy.url" 2>"$dir/latencyproxy.log" &
	proxy_pid=$!
	trap 'kill $vgw_pid $proxy_pid 2>/dev/null || true' EXIT
	for _ in $(seq 100); do [[ -s $dir/latencyproxy.url ]] && break; sleep 0.1; done
	AWS_ENDPOINT_URL=$(cat "$dir/latencyproxy.url")
	echo "through latencyproxy at $AWS_ENDPOINT_URL: ${latency} ms before every request"
fi

# data (deterministic, generated once): the big shard and the small shards
big=$dir/data/big-$big_mb.parquet
if [[ ! -f $big ]]; then
	mkdir -p "$dir/data/gen-big"
	python3 "$repo/bench/gen_corpus.py" --out "$dir/data/gen-big" --bytes $((big_mb << 20)) --shard-bytes $((1 << 40)) >&2
	"$bin" convert --in "$dir/data/gen-big/part-0000.jsonl" --out "$big" >/dev/null
	rm -rf "$dir/data/gen-big"
fi
small=$dir/data/small-$shards
if [[ ! -d $small ]]; then
	python3 "$repo/bench/gen_corpus.py" --out "$small.tmp" --bytes $((shards * 400000)) --shard-bytes 400000 --seed 7 >&2
	mv "$small.tmp" "$small"
fi
# the same files in the bucket (versitygw's posix backend serves its folder)
mkdir -p "$store/bench/big" "$store/bench/small"
ln -f "$big" "$store/bench/big/" 2>/dev/null || cp "$big" "$store/bench/big/"
cp "$small"/*.jsonl "$store/bench/small/"
text_bytes=$((big_mb << 20))

server_cpu() { # the S3 server's user+system CPU seconds so far
	awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$vgw_pid/stat"
}
timed() { # label, then the command: sets wall (seconds), rss (MB), srv (server CPU seconds)
	local label=$1 s0
	shift
	s0=$(server_cpu)
	/usr/bin/time -v -o "$dir/time.log" taskset -c "$cpus" "$@" >"$dir/$label.json" 2>"$dir/$label.err" || {
		echo "$label failed:" >&2
		tail -20 "$dir/$label.err" >&2
		exit 1
	}
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$dir/time.log")
	rss=$(awk -F': ' '/Maximum resident set size/ {printf "%d", $2 / 1024}' "$dir/time.log")
	srv=$(awk -v a="$s0" -v b="$(server_cpu)" 'BEGIN {printf "%.1f", b - a}')
}
rows_out() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rows_out"])' "$1"; }

if [[ $cases == *" 1 "* ]]; then
echo "1. convert one $(du -m "$big" | cut -f1) MiB Parquet shard ($big_mb MiB of text), cores $cpus"
printf '   %-18s %8s %8s %8s %10s\n' case wall_s MB/s RSS_MB server_cpu_s
for ((round = 1; round <= rounds; round++)); do
	for where in local s3; do
		if [[ $where == local ]]; then
			rm -rf "$dir/conv-out"
			timed conv-local "$bin" convert --in "$big" --out "$dir/conv-out/" --json
		else
			timed conv-s3 "$bin" convert --in s3://bench/big/ --out "s3://bench/conv-out-$round/" --json
			rm -rf "$store/bench/conv-out-$round"
		fi
		printf '   %-18s %8.2f %8.1f %8s %10s\n' "$where (round $round)" "$wall" "$(awk -v b="$text_bytes" -v w="$wall" 'BEGIN {printf "%.1f", b / 1e6 / w}')" "$rss" "$srv"
	done
done
rm -rf "$dir/conv-out"
fi

if [[ $cases == *" 2 "* ]]; then
echo "2. extract (spam classifier, --max-tokens 256) on $shards JSONL shards, cores $cpus"
printf '   %-18s %8s %8s %8s %8s %10s\n' case wall_s rows docs/s RSS_MB server_cpu_s
for ((round = 1; round <= rounds; round++)); do
	for where in local s3; do
		if [[ $where == local ]]; then
			rm -rf "$dir/ex-out"
			timed ex-local "$bin" extract --model spam --in "$small" --out "$dir/ex-out/" --max-tokens 256
			n=$(rows_out "$dir/ex-local.json")
		else
			timed ex-s3 "$bin" extract --model spam --in s3://bench/small/ --out "s3://bench/ex-out-$round/" --max-tokens 256
			n=$(rows_out "$dir/ex-s3.json")
			rm -rf "$store/bench/ex-out-$round"
		fi
		printf '   %-18s %8.2f %8s %8.1f %8s %10s\n' "$where (round $round)" "$wall" "$n" "$(awk -v n="$n" -v w="$wall" 'BEGIN {printf "%.1f", n / w}')" "$rss" "$srv"
	done
done
rm -rf "$dir/ex-out"
fi

[[ $cases == *" 3 "* ]] || exit 0
echo "3. 3 workers on the s3 corpus, worker 3 running ${duty}% of the time (SIGSTOP/SIGCONT), cores $cpus"
slow() { # runs "$@" stopped (100-duty)% of every second
	"$@" &
	local pid=$! on=$((duty * 10)) off=$(((100 - duty) * 10))
	while kill -0 "$pid" 2>/dev/null; do
		sleep "$(awk -v m="$on" 'BEGIN {print m / 1000}')"
		kill -STOP "$pid" 2>/dev/null || break
		sleep "$(awk -v m="$off" 'BEGIN {print m / 1000}')"
		kill -CONT "$pid" 2>/dev/null || break
	done
	wait "$pid"
}
for mode in static lease; do
	out=s3://bench/elastic-$mode/
	start=$(date +%s.%N)
	pids=()
	for w in 0 1 2; do
		args=(extract --model spam --in s3://bench/small/ --out "$out" --max-tokens 256 --workers 1 --summary "$dir/elastic-$mode-$w.json")
		[[ $mode == static ]] && args+=(--rank "$w" --world 3)
		if ((w == 2)); then
			(slow taskset -c "$cpus" "$bin" "${args[@]}" >/dev/null 2>"$dir/elastic-$mode-$w.err"; echo "$(date +%s.%N)" >"$dir/elastic-$mode-$w.end") &
		else
			(taskset -c "$cpus" "$bin" "${args[@]}" >/dev/null 2>"$dir/elastic-$mode-$w.err"; echo "$(date +%s.%N)" >"$dir/elastic-$mode-$w.end") &
		fi
		pids+=($!)
	done
	wait "${pids[@]}"
	line="   $mode:"
	total=0
	for w in 0 1 2; do
		n=$(rows_out "$dir/elastic-$mode-$w.json")
		total=$((total + n))
		line+=" worker $w $(awk -v s="$start" -v e="$(cat "$dir/elastic-$mode-$w.end")" 'BEGIN {printf "%.1f", e - s}') s / $n rows;"
	done
	end=$(cat "$dir"/elastic-$mode-*.end | sort -n | tail -1)
	echo "$line wall $(awk -v s="$start" -v e="$end" 'BEGIN {printf "%.1f", e - s}') s, $total rows"
	rm -rf "$store/bench/elastic-$mode"
done
