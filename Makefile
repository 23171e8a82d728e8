# HealthGate. `make demo` imports the sample files into a fresh database and lists the workouts;
# `make test` sets up what the tests need and runs them.

SWIFT ?= swift
DEMO_DB ?= demo.sqlite
BIN = .build/debug/healthgate

.PHONY: setup setup-build build server demo test peer-test server-test bench reference reference-check clean

setup:
	@bash .ci/setup

setup-build:
	@bash .ci/setup --build-only

build: setup-build
	$(SWIFT) build --product healthgate

# The reference tracking server (.build/debug/healthgate-server).
server: setup-build
	$(SWIFT) build --product healthgate-server

demo: build
	rm -f $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
	$(BIN) import --db $(DEMO_DB) Fixtures/fit/*.fit Fixtures/tcx Fixtures/gpx
	$(BIN) workouts --db $(DEMO_DB)
	$(BIN) stats --db $(DEMO_DB) --period month

test: setup
	$(SWIFT) test

# The emulated BLE peer (Bumble) that the BLE host tests talk to, checked by a raw Python H4 host.
peer-test: setup
	python3 -m pytest -q -p no:cacheprovider Tests/peers

# The reference server against its OpenAPI document: schemathesis (PyPI) on a real process.
server-test: setup server
	HEALTHGATE_SERVER=.build/debug/healthgate-server python3 -m pytest -q -p no:cacheprovider Tests/server

# Throughput next to baselines measured in the same run (release build).
bench: setup-build
	$(SWIFT) build -c release --product healthgate-server
	$(SWIFT) build -c release --product healthgate
	$(SWIFT) build -c release --product healthgate-bench
	.build/release/healthgate-bench Fixtures

# Regenerate the expected outputs from the independent reference decoders (PyPI).
reference:
	python3 Drivers/FIT/tools/fit_reference.py
	python3 Drivers/TCX/tools/tcx_reference.py Fixtures/tcx/*.tcx
	python3 Drivers/GPX/tools/gpx_reference.py $$(find Fixtures/gpx -name '*.gpx' | sort)

# Check that the committed expected outputs are what the reference decoders produce.
reference-check: reference
	git diff --exit-code -- Fixtures/*/expected

clean:
	rm -rf .build $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
