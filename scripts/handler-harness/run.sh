#!/bin/sh
# Builds harness.c against a tree's CSampler sources and runs it. The timings are rdtsc around one
# function: compare two trees by building both and alternating runs (the machine is shared).
#   scripts/handler-harness/run.sh [TREE] [ring|warm|parts] [qsort] [ticks]
#   CC=gcc scripts/handler-harness/run.sh . ring    # gcc: valgrind reads its debug info; then
#   valgrind --tool=callgrind ./.build/handler-harness ring "" 200   # instructions per capture
# CFLAGS are added (a tree older than the row cache: CFLAGS=-DHARNESS_OLD_FIND_ROW).
set -e
TREE=$(cd "${1:-.}" && pwd); shift || true
OUT="$TREE/.build/handler-harness"
mkdir -p "$TREE/.build"
${CC:-clang} -std=gnu11 -O2 -g -fno-omit-frame-pointer -D_GNU_SOURCE -Wall -Wextra $CFLAGS -I"$TREE/CSampler/src" -I"$TREE/CSampler/include" \
    "$(dirname "$0")/harness.c" "$TREE"/CSampler/src/*.c -o "$OUT" -lunwind-generic -lunwind -lnuma -ldl -lpthread
exec "$OUT" "${@:-ring}"
