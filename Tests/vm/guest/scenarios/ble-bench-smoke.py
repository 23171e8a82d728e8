"""A short run of the BLE benchmark (ble-bench.py) inside `make vm-test`: 3 heart-rate sensors at
4 Hz for 10 s per backend, without the CPU calibration; it proves the benchmark still works
(every value stored on both backends, the table written), not the numbers."""
import importlib.util
import os
import sys

spec = importlib.util.spec_from_file_location("ble_bench", os.path.join(os.path.dirname(__file__), "ble-bench.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

if __name__ == "__main__":
    sys.exit(bench.main(devices=3, rate_hz=4, window_s=10, calibrate=False))
