#!/usr/bin/env bash
# `make systemd-check`: the units pass `systemd-analyze verify`; the daemon's exposure under
# `systemd-analyze security --offline=yes` is at most 1.5 as it is (the configuration for no BLE
# and for BLE through BlueZ, which needs no drop-in) and at most 2.0 with the own-stack drop-in
# healthgate-ble.conf folded in, the tracking server's sample unit at most 1.5; the D-Bus policy for BlueZ (healthgate-bluez.conf) is well-formed
# and a real dbus-daemon loads it. The unit's ExecStart names the installed binary, which may not
# exist here: the checks run on a copy pointing at /bin/true. No systemd needs to run here.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed 's|^ExecStart=/usr/local/bin/healthgate|ExecStart=/bin/true|' healthgate.service > "$work/healthgate.service"
sed 's|^ExecStart=/usr/local/bin/healthgate-server|ExecStart=/bin/true|' healthgate-server.service > "$work/healthgate-server.service"
# The unit with the BLE drop-in's settings folded into its [Service] section.
python3 - "$work/healthgate.service" healthgate-ble.conf "$work/healthgate-ble.service" <<'PY'
import sys
unit = open(sys.argv[1]).read()
lines = [l for l in open(sys.argv[2]).read().splitlines() if l and not l.startswith('#') and l != '[Service]']
open(sys.argv[3], 'w').write(unit.replace('[Install]', '\n'.join(lines) + '\n\n[Install]'))
PY
# verify exits 0 on warnings too (an unknown key, say): any output is a failure.
output=$(systemd-analyze verify "$work/healthgate.service" "$work/healthgate-ble.service" "$work/healthgate-server.service" 2>&1)
if [ -n "$output" ]; then echo "$output"; echo "systemd-analyze verify: warnings above"; exit 1; fi
echo "systemd-analyze verify: OK"
for unit in healthgate healthgate-ble healthgate-server; do
  systemd-analyze security --offline=yes "$work/$unit.service" | tail -1
done
# --threshold is on the 0-100 scale: 15 is an exposure of 1.5, 20 of 2.0.
if ! systemd-analyze security --offline=yes --threshold=15 "$work/healthgate.service" >/dev/null; then
  echo "healthgate.service (no BLE, or BLE through BlueZ): exposure above 1.5"; exit 1
fi
echo "healthgate.service (no BLE, or BLE through BlueZ) exposure at most 1.5: OK"
if ! systemd-analyze security --offline=yes --threshold=20 "$work/healthgate-ble.service" >/dev/null; then
  echo "healthgate.service with healthgate-ble.conf (own host stack): exposure above 2.0"; exit 1
fi
echo "healthgate.service with healthgate-ble.conf (own host stack) exposure at most 2.0: OK"
if ! systemd-analyze security --offline=yes --threshold=15 "$work/healthgate-server.service" >/dev/null; then
  echo "healthgate-server.service: exposure above 1.5"; exit 1
fi
echo "healthgate-server.service exposure at most 1.5: OK"

# The D-Bus policy: well-formed XML, and a private dbus-daemon starts with it included (it refuses
# unknown elements and attributes; an unknown user, such as healthgate here, is only logged).
python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' healthgate-bluez.conf
cat > "$work/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=$work/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <include>$PWD/healthgate-bluez.conf</include>
</busconfig>
EOF
if ! started=$(dbus-daemon --config-file="$work/bus.conf" --fork --print-pid 2>"$work/dbus.err"); then
  cat "$work/dbus.err"; echo "dbus-daemon did not load healthgate-bluez.conf"; exit 1
fi
kill "$started"
echo "healthgate-bluez.conf: a dbus-daemon loads it: OK"
