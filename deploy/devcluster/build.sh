#!/usr/bin/env bash
# Build the Go binaries the dev stack and the tests run, from the Go module proxy into a
# per-version cache outside the clone ($CALDERA_CACHE, default ~/.cache/caldera), once per
# machine. Each target builds only its own binaries:
#
#   dev     etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, and kubectl
#           for the user (plus kwok's upstream stages): what `make dev` runs
#   helm    helm, for the chart's tests (deploy/helm)
#   server  the Temporal server, temporal-sql-tool and the Temporal UI server (plus the
#           server's SQL schema): `caldera dev up --temporal server`
#   all     the three: what `make test` runs
#
# Usage: build.sh [-q] TARGET...     build; one line per binary on stdout: what, how long it
#                                    took (or "cached"), where it went; -q: not the cached ones
#        build.sh --list TARGET...   the binaries the targets name, one a line; builds nothing
#        build.sh --bin-dir          the directory they go to; builds nothing
#
# Go's own output goes to a log per binary beside the bin directory; a failed build names it
# and prints its last lines on stderr. A binary already there at its pinned version is kept.
# Why wrapper modules: k8s.io/kubernetes and etcd's server carry replace directives, so
# `go install <module>@<version>` is refused; each wrapper pins the published versions.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env source-path=SCRIPTDIR
. "$here/versions.env"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod

cache=${CALDERA_CACHE:-$HOME/.cache/caldera}
root="$cache/devcluster-k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
bin="$root/bin"
logs="$root/logs"

usage() {
  sed -n '/^# Usage:/,/^# *$/s/^# \{0,1\}//p' "$0" >&2
  echo "targets: dev, helm, server, all (see the top of $0)" >&2
  exit 2
}

binaries_of() {
  case $1 in
    dev) echo kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok ;;
    helm) echo helm ;;
    server) echo temporal-server temporal-sql-tool temporal-ui-server ;;
    all) echo "$(binaries_of dev) $(binaries_of helm) $(binaries_of server)" ;;
    *) return 1 ;;
  esac
}

version_of() {
  case $1 in
    kube-* | kubectl) echo "$K8S_VERSION" ;;
    etcd) echo "$ETCD_VERSION" ;;
    kwok) echo "$KWOK_VERSION" ;;
    helm) echo "$HELM_VERSION" ;;
    temporal-server | temporal-sql-tool) echo "$TEMPORAL_SERVER_VERSION" ;;
    temporal-ui-server) echo "$TEMPORAL_UI_VERSION" ;;
  esac
}

k8s_ldflags() {
  local minor=${K8S_VERSION#v1.} ld="-s -w" p
  minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ld="$ld -X $p.gitTreeState=clean -X $p.gitCommit=0000000000000000000000000000000000000000"
    ld="$ld -X $p.buildDate=2026-01-01T00:00:00Z"
  done
  echo "$ld"
}

# One `go build` per binary: the shared packages come from Go's build cache after the first.
compile() {
  case $1 in
    kube-* | kubectl)
      (cd "$here/k8s" && go build -trimpath -tags=notest -ldflags="$(k8s_ldflags)" \
        -o "$bin/$1" "k8s.io/kubernetes/cmd/$1") ;;
    etcd)
      (cd "$here/etcd" && go build -trimpath -ldflags="-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3) ;;
    kwok)
      (cd "$here/kwok" && go build -trimpath -ldflags="-s -w" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok) ;;
    helm)
      (cd "$here/helm" && go build -trimpath \
        -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
        -o "$bin/helm" helm.sh/helm/v3/cmd/helm) ;;
    temporal-server)
      (cd "$here/temporal" && go build -trimpath -ldflags="-s -w" -o "$bin/temporal-server" \
        go.temporal.io/server/cmd/server) ;;
    temporal-sql-tool)
      (cd "$here/temporal" && go build -trimpath -ldflags="-s -w" -o "$bin/temporal-sql-tool" \
        go.temporal.io/server/cmd/tools/sql) ;;
    temporal-ui-server)
      (cd "$here/temporal-ui" && go build -trimpath -ldflags="-s -w" -o "$bin/temporal-ui-server" \
        github.com/temporalio/ui-server/v2/cmd/server) ;;
  esac
}

have() {
  local flag=--version out
  [ "$1" = kubectl ] && flag="version --client"
  [ "$1" = helm ] && flag="version --short"
  [ -x "$bin/$1" ] || return 1
  # Captured first: `| grep -q` would stop reading early and, under pipefail, the binary's
  # SIGPIPE would read as "missing" and trigger a rebuild.
  # shellcheck disable=SC2086
  out=$("$bin/$1" $flag 2>/dev/null) || return 1
  [[ "$out" == *"${2#v}"* ]]
}

took() {
  local s=$((SECONDS - $1))
  if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

said_header=0
header() {
  [ "$said_header" = 1 ] && return
  said_header=1
  command -v go >/dev/null || { echo "devcluster-build: go not found; Go >= 1.26 is needed" >&2; exit 1; }
  echo "devcluster-build: building with $(go version | cut -d' ' -f3) into $bin" \
    "(minutes each when cold; Go's output: $logs/<binary>.log)"
}

build_one() {
  local name=$1 version what start log
  version=$(version_of "$name")
  what=$(printf '%-32s' "$name $version")
  if have "$name" "$version"; then
    [ "$quiet" = 1 ] || echo "devcluster-build: $what cached        $bin/$name"
    return
  fi
  header
  mkdir -p "$bin" "$logs"
  log="$logs/$name.log"
  start=$SECONDS
  printf 'devcluster-build: %s ' "$what" # the line ends when the build does
  if ! compile "$name" >"$log" 2>&1; then
    echo "FAILED after $(took "$start"); Go's output: $log"
    tail -n 20 "$log" >&2
    exit 1
  fi
  printf 'built in %-6s %s\n' "$(took "$start")" "$bin/$name"
}

# The module's directory in Go's module cache (downloaded first if a cleaned cache lacks it).
module_dir() {
  local dir
  dir=$(cd "$here/$1" && go mod download "$2" && go list -m -f '{{.Dir}}' "$2") && [ -n "$dir" ] \
    || { echo "devcluster-build: $2 is not in Go's module cache and did not download" >&2 && exit 1; }
  echo "$dir"
}

# kwok's upstream stages come from the module cache at build time; none are committed.
kwok_stages() {
  local stages="$root/stages" kdir s
  if [ ! -f "$stages/.done" ]; then
    header
    mkdir -p "$stages"
    kdir=$(module_dir kwok sigs.k8s.io/kwok)
    for s in node/fast/node-initialize node/heartbeat/node-heartbeat pod/fast/pod-ready \
      pod/fast/pod-delete; do
      cp "$kdir/kustomize/stage/$s.yaml" "$stages/$(basename "$s").yaml"
    done
    chmod u+w "$stages"/*.yaml
    touch "$stages/.done"
    echo "devcluster-build: $(printf '%-32s' "kwok stages $KWOK_VERSION") copied          $stages"
  elif [ "$quiet" != 1 ]; then
    echo "devcluster-build: $(printf '%-32s' "kwok stages $KWOK_VERSION") cached        $stages"
  fi
}

# The server's SQL schema comes from its module at build time; none of it is committed.
temporal_schema() {
  local schema="$root/temporal-schema" tdir
  if [ ! -f "$schema/.done-$TEMPORAL_SERVER_VERSION" ]; then
    header
    rm -rf "$schema" && mkdir -p "$schema"
    tdir=$(module_dir temporal go.temporal.io/server)
    cp -r "$tdir/schema/postgresql" "$schema/"
    chmod -R u+w "$schema"
    touch "$schema/.done-$TEMPORAL_SERVER_VERSION"
    echo "devcluster-build: $(printf '%-32s' "temporal schema $TEMPORAL_SERVER_VERSION") copied          $schema"
  elif [ "$quiet" != 1 ]; then
    echo "devcluster-build: $(printf '%-32s' "temporal schema $TEMPORAL_SERVER_VERSION") cached        $schema"
  fi
}

quiet=0 list=0 targets=()
for arg in "$@"; do
  case $arg in
    -q) quiet=1 ;;
    --list) list=1 ;;
    --bin-dir) echo "$bin" && exit 0 ;;
    -*) usage ;;
    *)
      binaries_of "$arg" >/dev/null || { echo "build.sh: no target $arg" >&2 && usage; }
      targets+=("$arg") ;;
  esac
done
[ "${#targets[@]}" -gt 0 ] || usage

names=()
for t in "${targets[@]}"; do
  for n in $(binaries_of "$t"); do
    [[ " ${names[*]} " == *" $n "* ]] || names+=("$n")
  done
done

if [ "$list" = 1 ]; then
  printf '%s\n' "${names[@]}"
  exit 0
fi

for n in "${names[@]}"; do
  build_one "$n"
  if [ "$n" = kwok ]; then kwok_stages; fi
  if [ "$n" = temporal-server ]; then temporal_schema; fi
done
