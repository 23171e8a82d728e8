#!/usr/bin/env bash
# `make systemd-check`: the unit passes `systemd-analyze verify` and its exposure under
# `systemd-analyze security --offline=yes` is at most 2.0 (the BLE drop-in's figure is printed
# too). The unit's ExecStart names the installed binary, which may not exist here: the checks
# run on a copy pointing at /bin/true.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed 's|^ExecStart=/usr/local/bin/healthgate|ExecStart=/bin/true|' healthgate.service > "$work/healthgate.service"
# The unit with the BLE drop-in's settings folded into its [Service] section.
python3 - "$work/healthgate.service" healthgate-ble.conf "$work/healthgate-ble.service" <<'PY'
import sys
unit = open(sys.argv[1]).read()
lines = [l for l in open(sys.argv[2]).read().splitlines() if l and not l.startswith('#') and l != '[Service]']
open(sys.argv[3], 'w').write(unit.replace('[Install]', '\n'.join(lines) + '\n\n[Install]'))
PY
# verify exits 0 on warnings too (an unknown key, say): any output is a failure.
output=$(systemd-analyze verify "$work/healthgate.service" "$work/healthgate-ble.service" 2>&1)
if [ -n "$output" ]; then echo "$output"; echo "systemd-analyze verify: warnings above"; exit 1; fi
echo "systemd-analyze verify: OK"
for unit in healthgate healthgate-ble; do
  systemd-analyze security --offline=yes "$work/$unit.service" | tail -1
done
# --threshold is on the 0-100 scale: 20 is an exposure of 2.0.
systemd-analyze security --offline=yes --threshold=20 "$work/healthgate.service" >/dev/null
echo "healthgate.service exposure at most 2.0: OK"
