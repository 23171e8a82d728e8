#!/bin/sh
# Records Fixtures/ble/hr-csc-watch.{btsnoop,peer.btsnoop,sent.jsonl} again.
#
# A HealthGate host (HostRuntime, as `healthgate ble watch` uses it) against the Bumble peer
# (Tests/peers/ble_peer.py --peripheral hr --peripheral csc --rate 4 --sent-log ... --snoop ...):
# connect both peripherals, discover, read Battery Level (hr) and CSC Feature (csc), subscribe to
# the measurements, wait for 12 notifications from each, disconnect both. The recorder is the
# test BLERuntimeTests.FixtureRecorder; it keeps the files only when the host received exactly
# what the peer's sent log says it sent. Needs Bumble: pip install -r requirements-test.txt.
#
# Timestamps and the order in which the two devices' notifications interleave differ from run
# to run; the bytes of each device's values do not (seeded script, fixed own address).
set -eu
cd "$(dirname "$0")/../.."
HG_RECORD_BLE_FIXTURE="$PWD/Fixtures/ble" swift test --filter 'BLERuntimeTests.FixtureRecorder'
ls -l Fixtures/ble
