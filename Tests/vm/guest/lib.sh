# Shared by init-mode.sh and systemd-mode.sh (sourced; POSIX sh). Runs the scenarios listed in
# /share/plan and reports through isa-debug-exit.

SHARE=/share
RESULTS=$SHARE/results

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# The runner has started: the host measures the boot time from this file's appearance.
mark_started() {
  mkdir -p "$RESULTS"
  printf '{"mode":"%s","uptime_s":%s}\n' "$1" "$(uptime_s)" > "$RESULTS/started.json"
}

# One line per scenario in /share/plan: NAME LIMIT_S. A scenario is guest/scenarios/NAME.py (run
# by the venv's Python, which sees Debian's python3-dbus and python3-gi) or NAME.sh. It gets
#   HG_RESULTS  its folder on the share (status, log, and whatever it copies out)
#   HG_WORK     a folder on the guest's own disk (SQLite databases do not work on 9p)
#   HG_SHARE    the share; HG_BIN the healthgate binary when the host passed one, HG_SERVER_BIN
#               the healthgate-server binary likewise
# and writes its verdict as its exit status. Returns 1 if any scenario failed.
run_plan() {
  failed=0
  while read -r name limit; do
    [ -n "$name" ] || continue
    out=$RESULTS/$name
    work=/var/tmp/hg/$name
    mkdir -p "$out" "$work"
    if [ -f "$SHARE/guest/scenarios/$name.py" ]; then
      set -- /opt/hg-venv/bin/python3 -u "$SHARE/guest/scenarios/$name.py"
    else
      set -- /bin/sh "$SHARE/guest/scenarios/$name.sh"
    fi
    echo "hg: scenario $name (limit ${limit}s)" > /dev/console
    t0=$(uptime_s)
    HG_RESULTS=$out HG_WORK=$work HG_SHARE=$SHARE HG_BIN=$([ -x "$SHARE/bin/healthgate" ] && echo "$SHARE/bin/healthgate") \
      HG_SERVER_BIN=$([ -x "$SHARE/bin/healthgate-server" ] && echo "$SHARE/bin/healthgate-server") \
      timeout -k 5 "$limit" "$@" < /dev/null > "$out/log" 2>&1
    rc=$?
    case $rc in
      0) status=pass ;;
      124|137) status="timeout after ${limit}s"; failed=1 ;;
      *) status="fail (exit $rc)"; failed=1 ;;
    esac
    echo "$status" > "$out/status"
    awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f\n", b - a }' > "$out/elapsed_s"
    echo "hg: scenario $name: $status" > /dev/console
  done < "$SHARE/plan"
  return $failed
}

# QEMU's isa-debug-exit: writing byte RC to port 0xf4 ends QEMU with status (RC << 1) | 1.
report() {
  sync
  printf "\\$(printf %03o "$1")" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
  sleep 10  # QEMU is gone by now
}
