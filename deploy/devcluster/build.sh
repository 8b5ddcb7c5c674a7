#!/usr/bin/env bash
# Build the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kwok, and kubectl for the user), helm for the chart's tests, and the Temporal server, its SQL
# tool and its UI server for the server profile, from the Go module proxy into a per-version cache outside
# the clone, once per machine.
#
# Prints the bin directory on stdout. A second run with the binaries present does nothing.
# Why wrapper modules: k8s.io/kubernetes and etcd's server carry replace directives, so
# `go install <module>@<version>` is refused; each wrapper pins the published versions.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

cache=${CALDERA_CACHE:-$HOME/.cache/caldera}
bin="$cache/devcluster-k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION/bin"
mkdir -p "$bin"

have() {
  local flag=--version out
  [ "$1" = kubectl ] && flag="version --client"
  [ "$1" = helm ] && flag="version --short"
  [ -x "$bin/$1" ] || return 1
  # Captured first: `| grep -q` would stop reading early and, under pipefail, the binary's
  # SIGPIPE would read as "missing" and trigger a rebuild.
  # shellcheck disable=SC2086
  out=$("$bin/$1" $flag 2>/dev/null) || return 1
  [[ "$out" == *"$2"* ]]
}

log() { printf 'devcluster-build: %s\n' "$*" >&2; }

if ! have kube-apiserver "$K8S_VERSION" || ! have kube-controller-manager "$K8S_VERSION" \
  || ! have kube-scheduler "$K8S_VERSION" || ! have kubectl "$K8S_VERSION"; then
  log "building kubernetes $K8S_VERSION (a cold build takes 10-25 minutes on 2 cores)"
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ld="$ld -X $p.gitTreeState=clean -X $p.gitCommit=0000000000000000000000000000000000000000"
    ld="$ld -X $p.buildDate=2026-01-01T00:00:00Z"
  done
  (cd "$here/k8s" && go build -trimpath -tags=notest -ldflags="$ld" -o "$bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
fi

if ! have etcd "${ETCD_VERSION#v}"; then
  log "building etcd $ETCD_VERSION"
  (cd "$here/etcd" && go build -trimpath -ldflags="-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3)
fi

if ! have kwok "${KWOK_VERSION#v}"; then
  log "building kwok $KWOK_VERSION"
  (cd "$here/kwok" && go build -trimpath -ldflags="-s -w" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok)
fi

if ! have helm "$HELM_VERSION"; then
  log "building helm $HELM_VERSION"
  (cd "$here/helm" && go build -trimpath -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    -o "$bin/helm" helm.sh/helm/v3/cmd/helm)
fi

if ! have temporal-server "${TEMPORAL_SERVER_VERSION#v}" || ! have temporal-sql-tool "${TEMPORAL_SERVER_VERSION#v}"; then
  log "building the Temporal server $TEMPORAL_SERVER_VERSION (a cold build takes 5-15 minutes)"
  (cd "$here/temporal" && go build -trimpath -ldflags="-s -w" -o "$bin/" \
    go.temporal.io/server/cmd/server go.temporal.io/server/cmd/tools/sql)
  mv "$bin/server" "$bin/temporal-server"
  mv "$bin/sql" "$bin/temporal-sql-tool"
fi

# The server's SQL schema comes from its module at build time; none of it is committed.
schema="$bin/../temporal-schema"
if [ ! -f "$schema/.done-$TEMPORAL_SERVER_VERSION" ]; then
  rm -rf "$schema" && mkdir -p "$schema"
  tdir=$(cd "$here/temporal" && go list -m -f '{{.Dir}}' go.temporal.io/server)
  cp -r "$tdir/schema/postgresql" "$schema/"
  chmod -R u+w "$schema"
  touch "$schema/.done-$TEMPORAL_SERVER_VERSION"
fi

if ! have temporal-ui-server "${TEMPORAL_UI_VERSION#v}"; then
  log "building the Temporal UI server $TEMPORAL_UI_VERSION"
  (cd "$here/temporal-ui" && go build -trimpath -ldflags="-s -w" -o "$bin/temporal-ui-server" \
    github.com/temporalio/ui-server/v2/cmd/server)
fi

# kwok's upstream stages come from the module cache at build time; none are committed.
stages="$bin/../stages"
if [ ! -f "$stages/.done" ]; then
  mkdir -p "$stages"
  kdir=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  for s in node/fast/node-initialize node/heartbeat/node-heartbeat pod/fast/pod-ready \
    pod/fast/pod-delete; do
    cp "$kdir/kustomize/stage/$s.yaml" "$stages/$(basename "$s").yaml"
  done
  chmod u+w "$stages"/*.yaml
  touch "$stages/.done"
fi

echo "$bin"
