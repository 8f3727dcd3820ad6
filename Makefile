# relq: `make test` is what CI runs (.ci/run).
GO ?= go

.PHONY: test vet redis-server fuzz demo

test: redis-server
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 25m ./...

# The tests need a real redis-server (internal/redistest starts private ones); install it
# from Debian packages when it is missing, with sudo only when not root.
redis-server:
	@if ! command -v redis-server >/dev/null 2>&1; then \
		echo "redis-server not found: installing it with apt-get"; \
		if [ "$$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server; \
	fi

vet:
	$(GO) vet ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeEnvelope -fuzztime 60s ./pubsub/

demo:
	$(GO) run ./cmd/relq demo
