#!/usr/bin/env bash
# Generates structs/structs.generated.go: codecgen's msgpack encoders and
# decoders (codec.Selfer methods) for the structs package types, so msgpack
# on Raft entries, snapshots and RPC skips reflection. See structs/codec.go.
#
#   scripts/codecgen.sh          regenerate the file (make generate)
#   scripts/codecgen.sh -check   fail if the committed file differs from what
#                                the current sources generate (make lint)
#
# codecgen is pinned by go.mod (github.com/hashicorp/go-msgpack/v2) and runs
# with a fixed identifier (-d), so the output depends only on the sources.
# It works on a copy of the package in a temporary module: codecgen writes
# a temporary main package beside the sources while it runs, which would
# break anyone building the real tree at that moment.
set -euo pipefail
cd "$(dirname "$0")/.."

# Types that are never msgpack-encoded (HTTP bodies, state-only values,
# errors, which cross RPC as text) keep reflection; everything exported
# and not listed here is generated.
exclude='^(MessageType|ErrorCode|Error|FieldError|ValidationError|NodeUsage|ComparableResources|NamespacedID|JobRegisterHTTPRequest|JobPlanHTTPRequest|JobValidateHTTPRequest|JobsParseHTTPRequest|DrainSpec|NodeDrainHTTPRequest|NodeEligibilityHTTPRequest|NodeUpdateHTTPResponse|AgentSelf|AgentMember|AgentMembersResponse|AgentHealthResponse|AgentHealth|AllocIndex|VarConflictError|WorkloadIdentityClaims|PortUsage|PortKey|JobRevertHTTPRequest|ScalingHTTPRequest|JobStabilityHTTPRequest)$'
out=structs/structs.generated.go

check=false
case "${1:-}" in
  -check) check=true ;;
  "") ;;
  *) echo "usage: $0 [-check]" >&2; exit 2 ;;
esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/structs"
cp go.mod go.sum "$tmp/"
inputs=()
for f in $(cd structs && LC_ALL=C ls *.go); do
  case "$f" in *_test.go | *.generated.go) continue ;; esac
  cp "structs/$f" "$tmp/structs/"
  inputs+=("$f")
done

(cd "$tmp/structs" && go run github.com/hashicorp/go-msgpack/v2/codec/codecgen \
  -d 1978 -t '!codecgen.exec' -r '^[A-Z]' -nr "$exclude" \
  -o structs.generated.go "${inputs[@]}")

if $check; then
  if ! cmp -s "$tmp/structs/structs.generated.go" "$out"; then
    diff -u "$out" "$tmp/structs/structs.generated.go" | head -40 >&2 || true
    echo "$out is stale (a stale file silently drops new fields): run 'make generate' and commit it" >&2
    exit 1
  fi
  exit 0
fi
cp "$tmp/structs/structs.generated.go" "$out.tmp"
mv "$out.tmp" "$out"
