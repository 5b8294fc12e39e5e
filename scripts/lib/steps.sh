# Sourced by scripts/test.sh and scripts/e2e-servers.sh: `step NAME COMMAND...` runs the command
# and prints its wall time, so a CI log shows where the time goes.
#
# Before sourcing, set STEP_PREFIX (the log lines' prefix, e.g. "test") and STEP_MODE:
#   stop      a failed step prints the total so far and exits with its status, as a failed
#             command under `set -e` would;
#   continue  a failed step's status is kept in $status (the last one wins) and the next steps
#             still run: one log shows every failure.
# step_started holds $SECONDS at sourcing, for the total.
step_started=$SECONDS
status=0
step() {
  local name=$1 t=$SECONDS rc=0
  shift
  "$@" || rc=$?
  case "$STEP_MODE" in
    stop)
      echo "$STEP_PREFIX: step $name: $((SECONDS - t)) s"
      if [ "$rc" -ne 0 ]; then
        echo "$STEP_PREFIX: step $name failed (exit $rc); total: $((SECONDS - step_started)) s"
        exit "$rc"
      fi
      ;;
    continue)
      echo "$STEP_PREFIX: step $name: $((SECONDS - t)) s (exit $rc)"
      [ "$rc" -eq 0 ] || status=$rc
      ;;
    *)
      echo "$STEP_PREFIX: unknown STEP_MODE '$STEP_MODE' (stop or continue)" >&2
      exit 2
      ;;
  esac
}
