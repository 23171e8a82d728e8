# Systemd mode: ExecStart of healthgate-vm-test.service (baked into the image), systemd is PID 1.
. /share/guest/lib.sh
mark_started systemd
run_plan
rc=$?
journalctl -b --no-pager -o short-monotonic > "$RESULTS/journal.log" 2>&1
report $rc
