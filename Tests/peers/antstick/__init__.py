"""The emulated ANT USB stick of Tests/peers/ant_stick.py, in parts.

- ``protocol``: ANT serial framing, message ids, response and event codes, CRC-16/ARC.
- ``sensors``: the ANT+ masters the stick can hear (heart rate, power, speed/cadence, stride,
  fitness equipment, weight scale), each producing its data pages at its own period.
- ``antfs``: an ANT-FS client (a watch serving FIT files): beacon, link, authentication,
  directory and chained-CRC downloads.
- ``model``: the stick itself, a pure state machine with simulated time (no I/O).
- ``functionfs``: the USB edge, a configfs gadget with FunctionFS endpoints on a UDC.

Everything here is written from the facts in the project's ANT notes; see Tests/peers/ANT.md.
"""
