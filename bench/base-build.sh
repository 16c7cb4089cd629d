#!/usr/bin/env bash
# Building the base of a paired run: the head's target dir shared, or the base's own (issue 13).
#
# The base is this repository's HEAD tree (git archive) with one line appended to
# fixtures/demo-service/src/app.rs, in a temporary directory. It times, for a release host build of
# demo-service:
#   1. the head (this checkout) in its own target dir, to start from a fresh head;
#   2. the base with --target-dir set to the head's target dir (shared), then the head again, and
#      whether the head's target/release/demo-service is then byte-equal to the base's binary
#      (cargo names workspace artifacts by their workspace-relative path and judges freshness by
#      file times: the head's rebuild sees nothing to do);
#   3. the head after `cargo clean --release -p demo-service`, which repairs it;
#   4. the base with its own, empty target dir (cold), then again after another one-line change
#      (warm: a later base with the dir cached).
# Read the load average it prints: builds share the cores with whatever else runs.
#
# Usage: bench/base-build.sh            (from the repository root; takes a few minutes)
# Env:   HEAD_TARGET=target (the head's target dir)  KEEP=0 (1 keeps the temporary directory)
set -euo pipefail

root=$(git rev-parse --show-toplevel)
head_target=$(realpath "${HEAD_TARGET:-$root/target}")
work=$(mktemp -d)
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$work"' EXIT
base="$work/base"
mkdir -p "$base"
git -C "$root" archive HEAD | tar -x -C "$base"
echo "// base side marker" >>"$base/fixtures/demo-service/src/app.rs"

build() { # build LABEL DIR [cargo args…]: prints seconds and crates compiled
	local label=$1 dir=$2
	shift 2
	local start end
	start=$(date +%s.%N)
	(cd "$dir" && cargo build --release -p demo-service --bin demo-service "$@") >"$work/log" 2>&1
	end=$(date +%s.%N)
	printf '%-58s %7.2f s  %3d crate(s) compiled\n' "$label" "$(echo "$end - $start" | bc)" \
		"$(grep -c Compiling "$work/log" || true)"
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
build "head (fresh start)" "$root" --target-dir "$head_target"
build "base, shared target dir" "$base" --target-dir "$head_target"
cp "$head_target/release/demo-service" "$work/base.bin"
build "head again, after the shared base build" "$root" --target-dir "$head_target"
if cmp -s "$head_target/release/demo-service" "$work/base.bin"; then
	echo "  -> the head's target/release/demo-service IS the base's binary"
else
	echo "  -> the head's binary differs from the base's"
fi
(cd "$root" && cargo clean -q --release -p demo-service --target-dir "$head_target")
build "head after cargo clean -p demo-service (repaired)" "$root" --target-dir "$head_target"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
build "base, own target dir, cold" "$base" --target-dir "$work/base-target"
echo "// another base" >>"$base/fixtures/demo-service/src/app.rs"
build "base, own target dir, warm (a later base)" "$base" --target-dir "$work/base-target"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "own target dir: $(du -sh "$work/base-target" | cut -f1)"
