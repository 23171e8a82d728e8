# HealthGate. `make demo` imports the sample files into a fresh database and lists the workouts;
# `make test` sets up what the tests need and runs them.

SWIFT ?= swift
DEMO_DB ?= demo.sqlite
BIN = .build/debug/healthgate

.PHONY: setup setup-build build server demo daemon test browser-test install-server uninstall-server format format-check peer-test server-test bench bench-capacity bench-apple fuzz fuzz-build fuzz-smoke fuzz-corpus reference reference-check systemd-check vm-image vm-test bench-ble bench-ant bench-watch install uninstall clean

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

# A failed run repeats the failed tests' issues at its end (.ci/swift-test).
# Every suite on SQLite, then again on PostgreSQL the suites that run servers: the server's own,
# the forwarder's, and the CLI's sync tests (Tests/TestSupport/ServerProcess.swift, TestStore).
POSTGRES_SUITES = HealthGateServerTests|HealthSyncTests|AccountCommandTests|EditSyncTests|DayStartCLITests|DerivedSyncTests
test: setup
	SWIFT=$(SWIFT) bash .ci/swift-test
	HEALTHGATE_TEST_STORE=postgres SWIFT=$(SWIFT) bash .ci/swift-test --skip-build --filter '$(POSTGRES_SUITES)'

# Style: swift-format (part of the Swift toolchain) with .swift-format; README.md "Formatting" says
# what it checks and why its layout pass is off (--debug-disable-pretty-print: the rules only).
FORMAT_PATHS = Sources Drivers Tests Fuzz Package.swift
FORMAT_FLAGS = --debug-disable-pretty-print --recursive $(FORMAT_PATHS)
format-check:
	$(SWIFT) format lint --strict $(FORMAT_FLAGS)

format:
	$(SWIFT) format --in-place $(FORMAT_FLAGS)

# The emulated BLE peer (Bumble) that the BLE host tests talk to, checked by a raw Python H4 host.
peer-test: setup
	python3 -m pytest -q -p no:cacheprovider Tests/peers

# The reference server against its OpenAPI document: schemathesis (PyPI) on a real process.
server-test: setup server
	HEALTHGATE_SERVER=.build/debug/healthgate-server python3 -m pytest -q -p no:cacheprovider Tests/server

# The dashboard in a real browser: Chromium driven by Selenium against `healthgate dashboard`,
# values against the database, axe-core's WCAG 2 A/AA check, screenshots in .build/browser-results.
browser-test: setup build
	HEALTHGATE=$(BIN) python3 -m pytest -q -s -p no:cacheprovider Tests/browser

# Release builds carry the Swift runtime and Foundation inside the executable: the installed
# daemon needs no Swift toolchain on the machine, and an idle daemon maps no library pages that
# only other Swift programs would share.
RELEASE = -c release --static-swift-stdlib

# Throughput next to baselines measured in the same run (release build). It needs what the tests
# need (Bumble for the BLE peer, Chromium for first paints, PostgreSQL for the server load): the
# whole setup, not only the build's.
bench: setup
	$(SWIFT) build $(RELEASE) --product healthgate-server
	$(SWIFT) build $(RELEASE) --product healthgate
	$(SWIFT) build $(RELEASE) --product healthgate-bench
	.build/release/healthgate-bench Fixtures

# The tracking server's capacity on both stores (docs/server.md, Capacity): sustained sync rates
# open loop next to pgbench, then idle connections held, plain and TLS. About 10 minutes.
bench-capacity: setup
	$(SWIFT) build $(RELEASE) --product healthgate-server
	$(SWIFT) build $(RELEASE) --product healthgate-bench
	.build/release/healthgate-bench capacity

# Apple Health import of a synthetic export of APPLE_MB megabytes (1 GB by default; `make
# bench-apple APPLE_MB=20` for a smoke run) next to XMLStream alone and healthkit-to-sqlite.
APPLE_MB ?= 1024
bench-apple: setup
	$(SWIFT) build $(RELEASE) --product healthgate
	$(SWIFT) build $(RELEASE) --product healthgate-bench
	.build/release/healthgate-bench apple --size $(APPLE_MB)

# libFuzzer targets for the pure decoders (Fuzz/README.md): each replays its past crashes, then
# runs FUZZ_SECONDS over a scratch copy of its seed corpus; a crash fails the target and is kept
# in Fuzz/findings/<target>/. `make fuzz FUZZ_TARGETS="fuzz-fit fuzz-gpx"` runs only those.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(sort $(notdir $(wildcard Fuzz/Targets/fuzz-*)))
FUZZ_BUILD = $(SWIFT) build --package-path Fuzz -c release --sanitize fuzzer -Xswiftc -sanitize=fuzzer,address \
	--disable-dead-strip
fuzz-build: setup-build
	@listed=$$(grep -o '^    "fuzz-[a-z0-9]*",$$' Fuzz/Package.swift | tr -d ' ",' | sort); \
	folders=$$(ls Fuzz/Targets | grep '^fuzz-' | sort); \
	[ "$$listed" = "$$folders" ] || { echo "Fuzz/Package.swift lists other targets than Fuzz/Targets holds:"; \
		echo "listed: $$listed"; echo "folders: $$folders"; exit 1; }
	@mkdir -p Fuzz/.build
	@for target in $(FUZZ_TARGETS); do \
		echo "building $$target"; \
		$(FUZZ_BUILD) --product $$target >Fuzz/.build/build.log 2>&1 || { cat Fuzz/.build/build.log; exit 1; }; \
	done

fuzz: fuzz-build
	bash Fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The short run CI makes.
fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=5

# Rewrite the seed corpus (Fuzz/corpus) and the JSON dictionary from the fixtures.
fuzz-corpus:
	python3 Fuzz/make-corpus.py

# Regenerate the expected outputs from the independent reference decoders (PyPI).
reference:
	python3 Drivers/FIT/tools/fit_reference.py
	python3 Drivers/FIT/tools/sleep_reference.py
	python3 Drivers/TCX/tools/tcx_reference.py Fixtures/tcx/*.tcx
	python3 Drivers/GPX/tools/gpx_reference.py $$(find Fixtures/gpx -name '*.gpx' | sort)

# Check that the committed expected outputs are what the reference decoders produce.
reference-check: reference
	git diff --exit-code -- Fixtures/*/expected

# Runs the daemon on its embedded default: database, inbox and status socket in ./healthgate-state.
daemon: build
	@echo "drop FIT, TCX or GPX files into ./healthgate-state/inbox; Ctrl-C stops"
	.build/debug/healthgate daemon --state-dir ./healthgate-state

# The systemd unit: `systemd-analyze verify`, an exposure of at most 1.5 (2.0 with the own-stack
# BLE drop-in), and the BlueZ D-Bus policy loaded by a real dbus-daemon (systemd/check.sh).
systemd-check:
	bash systemd/check.sh

# The virtual-machine tests (Tests/vm/README.md): a Debian 12 guest (built with mmdebstrap, cached
# in .cache/vm, rebuilt when its recipe changes) booted under QEMU with a real bluetoothd and a real
# systemd; the release healthgate is passed in. `make vm-test VM_ARGS=-v` shows every log.
VM_ARGS ?=
vm-image: setup
	bash Tests/vm/build-image.sh

vm-test: vm-image
	$(SWIFT) build $(RELEASE) --product healthgate
	$(SWIFT) build $(RELEASE) --product healthgate-server
	python3 Tests/vm/run.py --no-build --binary .build/release/healthgate --server-binary .build/release/healthgate-server $(VM_ARGS)

# The BLE benchmark in the guest (Tests/vm/README.md, ble-bench): 10 heart-rate sensors at 4 Hz,
# notification to committed row p50/p99 and CPU, through BlueZ and through the own host stack.
bench-ble: vm-image
	$(SWIFT) build $(RELEASE) --product healthgate
	python3 Tests/vm/run.py --no-build --binary .build/release/healthgate --scenario ble-bench -v $(VM_ARGS)
	@cat .build/vm-results/init/ble-bench/bench.txt
	python3 Tests/vm/bench_ble_report.py --binary .build/release/healthgate

# The ANT benchmark in the guest (Tests/vm/README.md, ant-bench): 8 ANT+ sensors on the emulated
# stick through `record --ant`, message to committed row p50/p99 and CPU per 1,000 messages, next to
# 8 BLE heart-rate sensors through the own host stack in the same boot.
bench-watch: vm-image
	$(SWIFT) build $(RELEASE) --product healthgate
	python3 Tests/vm/run.py --no-build --binary .build/release/healthgate --scenario watch-bench -v $(VM_ARGS)
	@cat .build/vm-results/init/watch-bench/bench.txt

bench-ant: vm-image
	$(SWIFT) build $(RELEASE) --product healthgate
	python3 Tests/vm/run.py --no-build --binary .build/release/healthgate --scenario ant-bench -v $(VM_ARGS)
	@cat .build/vm-results/init/ant-bench/bench.txt
	python3 Tests/vm/bench_ble_report.py --binary .build/release/healthgate --results .build/vm-results/init/ant-bench

# `make install [PREFIX=/usr/local] [DESTDIR=]`: the release binary, the unit (its ExecStart
# follows PREFIX), the own-stack BLE drop-in as an example, the D-Bus policy for BLE through
# BlueZ (the system bus is told to reload it when it runs and DESTDIR is empty), sysusers,
# tmpfiles, udev rules, and the sample configuration unless one is there. Then:
# systemd-sysusers; systemd-tmpfiles --create; udevadm control --reload;
# systemctl daemon-reload; systemctl enable --now healthgate.
PREFIX ?= /usr/local
# The system bus re-reads its policy files (healthgate-bluez.conf) when told to, and drops a
# rule naming a user that does not exist yet: so without DESTDIR the healthgate user is created
# first (systemd-sysusers with its snippet), then the bus is told to reload; otherwise it is said.
SYSUSERS = if [ -z "$(DESTDIR)" ] && command -v systemd-sysusers >/dev/null; then \
	systemd-sysusers /usr/lib/sysusers.d/healthgate.conf; fi
DBUS_RELOAD = if [ -z "$(DESTDIR)" ] && [ -S /run/dbus/system_bus_socket ] && command -v dbus-send >/dev/null; then \
	dbus-send --system --print-reply --dest=org.freedesktop.DBus / org.freedesktop.DBus.ReloadConfig >/dev/null \
	&& echo "the system bus reloaded its policy (healthgate-bluez.conf)"; \
	else echo "reload the system bus's policy (healthgate-bluez.conf) once the healthgate user exists: systemctl reload dbus"; fi
# BINARY=path installs that executable instead of building the release one.
BINARY ?=
install:
	$(if $(BINARY),,$(SWIFT) build $(RELEASE) --product healthgate)
	install -D -m 0755 $(or $(BINARY),.build/release/healthgate) $(DESTDIR)$(PREFIX)/bin/healthgate
	install -d $(DESTDIR)/etc/systemd/system $(DESTDIR)/usr/lib/sysusers.d $(DESTDIR)/usr/lib/tmpfiles.d \
		$(DESTDIR)/etc/udev/rules.d $(DESTDIR)/etc/healthgate $(DESTDIR)$(PREFIX)/share/healthgate \
		$(DESTDIR)$(PREFIX)/share/doc/healthgate
	sed 's|/usr/local/|$(PREFIX)/|g' systemd/healthgate.service > $(DESTDIR)/etc/systemd/system/healthgate.service
	chmod 0644 $(DESTDIR)/etc/systemd/system/healthgate.service
	install -m 0644 systemd/healthgate-ble.conf $(DESTDIR)$(PREFIX)/share/healthgate/healthgate-ble.conf
	install -m 0644 systemd/healthgate.sysusers $(DESTDIR)/usr/lib/sysusers.d/healthgate.conf
	install -m 0644 systemd/healthgate.tmpfiles $(DESTDIR)/usr/lib/tmpfiles.d/healthgate.conf
	install -m 0644 systemd/60-healthgate.rules $(DESTDIR)/etc/udev/rules.d/60-healthgate.rules
	install -m 0644 systemd/70-healthgate-watch-no-desktop.rules $(DESTDIR)$(PREFIX)/share/healthgate/70-healthgate-watch-no-desktop.rules
	install -D -m 0644 systemd/healthgate-bluez.conf $(DESTDIR)/etc/dbus-1/system.d/healthgate-bluez.conf
	@$(SYSUSERS)
	@$(DBUS_RELOAD)
	install -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/healthgate/README.md
	[ -e $(DESTDIR)/etc/healthgate/healthgate.toml ] || install -m 0640 systemd/healthgate.toml $(DESTDIR)/etc/healthgate/healthgate.toml

# `make install-server [PREFIX=/usr/local] [DESTDIR=]`: the release tracking server, its sample unit
# (docs/server.md), its system user and its configuration folder (TLS certificate and key go in
# /etc/healthgate-server/tls; HEALTHGATE_DATABASE in /etc/healthgate-server/server.env).
install-server:
	$(if $(SERVER_BINARY),,$(SWIFT) build $(RELEASE) --product healthgate-server)
	install -D -m 0755 $(or $(SERVER_BINARY),.build/release/healthgate-server) $(DESTDIR)$(PREFIX)/bin/healthgate-server
	install -d $(DESTDIR)/etc/systemd/system $(DESTDIR)/usr/lib/sysusers.d $(DESTDIR)/etc/healthgate-server/tls \
		$(DESTDIR)$(PREFIX)/share/doc/healthgate
	sed 's|/usr/local/|$(PREFIX)/|g' systemd/healthgate-server.service > $(DESTDIR)/etc/systemd/system/healthgate-server.service
	chmod 0644 $(DESTDIR)/etc/systemd/system/healthgate-server.service
	install -m 0644 systemd/healthgate-server.sysusers $(DESTDIR)/usr/lib/sysusers.d/healthgate-server.conf
	install -m 0644 docs/server.md $(DESTDIR)$(PREFIX)/share/doc/healthgate/server.md
	$(if $(DESTDIR),,systemd-sysusers $(DESTDIR)/usr/lib/sysusers.d/healthgate-server.conf 2>/dev/null || true)

# `make uninstall-server`: what install-server put in place; /etc/healthgate-server and
# /var/lib/healthgate-server (certificates, configuration, the database) are kept.
uninstall-server:
	rm -f $(DESTDIR)$(PREFIX)/bin/healthgate-server $(DESTDIR)/etc/systemd/system/healthgate-server.service \
		$(DESTDIR)/usr/lib/sysusers.d/healthgate-server.conf $(DESTDIR)$(PREFIX)/share/doc/healthgate/server.md
	@echo "kept /etc/healthgate-server and /var/lib/healthgate-server (configuration, certificates and data)"

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/healthgate $(DESTDIR)/etc/systemd/system/healthgate.service \
		$(DESTDIR)/usr/lib/sysusers.d/healthgate.conf $(DESTDIR)/usr/lib/tmpfiles.d/healthgate.conf \
		$(DESTDIR)/etc/udev/rules.d/60-healthgate.rules $(DESTDIR)/etc/dbus-1/system.d/healthgate-bluez.conf
	@$(DBUS_RELOAD)
	rm -rf $(DESTDIR)$(PREFIX)/share/healthgate $(DESTDIR)$(PREFIX)/share/doc/healthgate
	@echo "kept /etc/healthgate and /var/lib/healthgate (configuration and data)"

clean:
	rm -rf .build $(DEMO_DB) $(DEMO_DB)-wal $(DEMO_DB)-shm
