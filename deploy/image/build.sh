#!/usr/bin/env bash
# Build Caldera's image without Docker or a registry: a base made from Debian's packages
# (debootstrap: Debian 12 with Python 3.11 in a venv first on PATH), then the repository's
# Dockerfile on that base with buildah. Needs root and Debian's debootstrap and buildah.
#
#   deploy/image/build.sh [TAG]        # default localhost/caldera:0.1.0
#
# The base is built once (localhost/caldera-base:bookworm) and reused. With Docker and a
# registry, `docker build .` on the Dockerfile's default base does the same.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
tag=${1:-localhost/caldera:0.1.0}
base=localhost/caldera-base:bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
export BUILDAH_ISOLATION=chroot  # no user namespaces or cgroups needed

log() { printf 'image-build: %s\n' "$*" >&2; }

if ! buildah inspect --type image "$base" >/dev/null 2>&1; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  log "making $base from Debian packages ($mirror)"
  debootstrap --variant=minbase --include=python3,python3-venv,passwd,ca-certificates \
    bookworm "$work/rootfs" "$mirror" >&2
  chroot "$work/rootfs" python3 -m venv /opt/python
  rm -rf "$work/rootfs/var/cache/apt/archives"/*.deb "$work/rootfs/var/lib/apt/lists"/*
  ctr=$(buildah from scratch)
  buildah copy "$ctr" "$work/rootfs" / >/dev/null
  buildah config --env PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 "$ctr"
  buildah commit --quiet "$ctr" "$base" >/dev/null
  buildah rm "$ctr" >/dev/null
fi

# The build's pip reaches PyPI as this machine's does: its /etc/pip.conf and CA bundle (a
# proxy's own CA, say) are mounted into the RUN steps, and are not kept in the image.
mounts=()
for f in /etc/pip.conf /etc/ssl/certs/ca-certificates.crt; do
  [ -f "$f" ] && mounts+=(--volume "$f:$f:ro")
done

# No --layers: the final stage installs from a bind mount of the build stage, which buildah's
# layer cache does not see change, so a cached final layer would keep the old package.
log "building $tag from the Dockerfile on $base"
buildah bud --quiet "${mounts[@]}" --build-arg "BASE=$base" -t "$tag" \
  -f "$root/Dockerfile" "$root"
buildah images --noheading --format '{{.ID}} {{.Size}}' "$tag"
