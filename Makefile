# relq: `make test` is what CI runs (.ci/run).
GO ?= go

.PHONY: test test-faults test-soak web-screenshots vet redis-server chromium fuzz demo

test: redis-server chromium
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 25m ./...

# The pictures of docs/web.md: the dashboard's browser test (web/browser_test.go) takes them
# as it goes; this keeps them in docs/images/web instead of a temporary directory.
web-screenshots: redis-server chromium
	RELQ_WEB_SCREENSHOTS=$(CURDIR)/docs/images/web $(GO) test -count=1 -run 'TestDashboardInABrowser$$' ./web/

# The fault scenarios of faults/ at full scale (build tag faults_full): 50,000 messages through
# SIGKILLed consumer processes, Redis SIGKILLed under load with AOF, 10,000 good messages with
# 1,000 corrupt entries, and the Cluster, Sentinel, ACL and TLS scenarios; prints the table kept in
# docs/reliability.md. `make test` runs the same scenarios at short scale.
# With -race: it is cheap here. The 50,000 messages of the kill scenario are handled by worker
# processes that the test builds without the race detector (so their timing, which the
# recovery figures measure, is a production build's); -race instruments only the test process
# (producers, in-process subscribers, log parsing). Measured on 2 vCPUs: about 4 minutes,
# 10% more than without it, for race checking of the in-process subscribers at full volume.
test-faults: redis-server
	$(GO) test -race -tags faults_full -count=1 -timeout 40m -v -run . ./faults/

# The memory soak of soak/ at full scale (build tag soak_full): Watermill's CQRS with an event type
# nobody handles, and request-reply with a shared reply topic and with a topic per request, 10,000
# requests each on every backend, and 10,000 Subscribe/cancel cycles with ephemeral groups on
# every backend; prints the tables kept in docs/operations.md and docs/reliability.md. `make test`
# runs the same soak with 1,000 requests and 1,000 cycles.
test-soak: redis-server
	$(GO) test -tags soak_full -count=1 -timeout 60m -v -run . ./soak/

# The tests need a real redis-server (internal/redistest starts private ones); install it
# from Debian packages when it is missing, with sudo only when not root.
redis-server:
	@if ! command -v redis-server >/dev/null 2>&1; then \
		echo "redis-server not found: installing it with apt-get"; \
		if [ "$$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server; \
	fi

# The browser tests (internal/browsertest) drive a headless /usr/bin/chromium; install it from
# Debian packages when it is missing, with sudo only when not root.
chromium:
	@if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then \
		echo "chromium not found: installing it with apt-get"; \
		if [ "$$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	fi

vet:
	$(GO) vet ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeEnvelope -fuzztime 60s ./backend/

demo:
	$(GO) run ./cmd/relq demo
