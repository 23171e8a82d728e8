# Systemd mode works: systemd is PID 1, this scenario runs inside a unit, the boot completes,
# and journald stores lines with their priority.
set -eu
echo "PID 1: $(cat /proc/1/comm)"
[ "$(cat /proc/1/comm)" = systemd ]
echo "cgroup: $(cat /proc/self/cgroup)"
grep -q 'healthgate-vm-test.service' /proc/self/cgroup
systemctl is-active healthgate-vm-test.service
# Waits for the boot to finish (this unit is Type=simple, so it does not hold the boot up).
state=$(timeout 120 systemctl is-system-running --wait || true)
echo "$state" > "$HG_RESULTS/system-state"
echo "is-system-running: $state"
systemctl --failed --no-legend --plain > "$HG_RESULTS/failed-units" || true
cat "$HG_RESULTS/failed-units"
# "degraded" only if a unit failed; the list above says which.
[ "$state" = running ] || [ "$state" = degraded ]
# journald: a line at priority warning (4) and one at debug (7); -p warning shows the first only.
tag=hg-vm-$$
echo "probe warning line" | systemd-cat -t "$tag" -p warning
echo "probe debug line" | systemd-cat -t "$tag" -p debug
for _ in $(seq 50); do
  journalctl -t "$tag" --no-pager -o cat | grep -q "probe debug line" && break
  sleep 0.2
done
journalctl -t "$tag" -p warning --no-pager -o cat > "$HG_RESULTS/journal-warning"
journalctl -t "$tag" --no-pager -o json | python3 -c 'import json,sys; print([ (json.loads(l)["PRIORITY"], json.loads(l)["MESSAGE"]) for l in sys.stdin])' > "$HG_RESULTS/journal-all"
cat "$HG_RESULTS/journal-warning" "$HG_RESULTS/journal-all"
[ "$(cat "$HG_RESULTS/journal-warning")" = "probe warning line" ]
grep -q "('4', 'probe warning line'), ('7', 'probe debug line')" "$HG_RESULTS/journal-all"
echo "ok"
