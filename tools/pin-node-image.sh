#!/usr/bin/env bash
# Pins deploy/Dockerfile's base image by digest (ADR 0056). Resolves the digest that the tag in
# NODE_TAG (or the tag given, e.g. node:24.22.3-bookworm-slim) points at now, with
# `docker buildx imagetools inspect` (the multi-platform index, so one digest serves amd64 and
# arm64), and writes it as NODE_DIGEST's default. Run it where the registry is reachable, commit
# the Dockerfile, and run it again to take a patched base image on purpose.
#   tools/pin-node-image.sh [tag]      DOCKERFILE=path overrides deploy/Dockerfile
set -euo pipefail
cd "$(dirname "$0")/.."
dockerfile=${DOCKERFILE:-deploy/Dockerfile}
tag=${1:-$(sed -n 's/^ARG NODE_TAG=//p' "$dockerfile")}
if [[ ! $tag =~ ^node:24[.a-z0-9-]*$ ]]; then
  echo "pin-node-image: '$tag' is not a node:24 tag (the current LTS the runtime is on)" >&2
  exit 2
fi
digest=$(docker buildx imagetools inspect "$tag" --format '{{.Manifest.Digest}}')
if [[ ! $digest =~ ^sha256:[0-9a-f]{64}$ ]]; then
  echo "pin-node-image: docker answered '$digest' for $tag, not a sha256 digest; nothing written" >&2
  exit 1
fi
sed -i -e "s|^ARG NODE_TAG=.*|ARG NODE_TAG=$tag|" -e "s|^ARG NODE_DIGEST=.*|ARG NODE_DIGEST=$digest|" "$dockerfile"
echo "pin-node-image: $dockerfile now builds on $tag@$digest"
