# The commands users type. CMake does the building; ctest runs the tests.
BUILD ?= build
JOBS  ?= $(shell nproc 2>/dev/null || echo 2)

# Debian 12 packages the build, the tests and the demo need.
DEB_PACKAGES = build-essential cmake pkg-config openssl libssl-dev \
  protobuf-c-compiler libprotobuf-c-dev libcmocka-dev libzstd-dev \
  collectd-core collectd-dev \
  ruby ruby-dev ruby-minitest ruby-async puma unicorn ruby-heapy zlib1g-dev golang-go \
  ruby-sidekiq redis-server \
  procps psmisc clang-format zstd util-linux \
  dpkg-dev systemd ruby-bundler libmicrohttpd12 prometheus rclone \
  clang libclang-rt-14-dev runc \
  lintian ruby-kramdown man-db debootstrap libjemalloc2

.PHONY: all deps build test demo bench clean format check-format package gem fuzz check-asan \
  check-tsan check-trixie

all: build

deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "memdiag: installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "memdiag: run 'make deps' as root to install:$$missing" >&2; exit 1; fi; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else echo "memdiag: all Debian packages present"; fi

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# A test that fails is run once more before the run counts it as failed:
# a few integration tests wait on real collectd, Ruby and fork timing on
# shared 2-core machines (docs/internals/testing.md names them); a test that
# fails twice fails the run.
test: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900 --repeat until-pass:2 -LE trixie

# Debian 13 in a debootstrap chroot cached in /var/cache/memdiag-trixie
# (tests/integration/trixie): the hook's integration tests and the gem test
# on Ruby 3.3 and OpenSSL 3.5. Minutes; the first run also builds the chroot.
check-trixie: deps
	$(MAKE) build
	cd $(BUILD) && ctest --output-on-failure -L trixie --repeat until-pass:2

# build/memdiag_<version>_<arch>.deb (conf/packaging/CPack.cmake)
package: build
	cd $(BUILD) && cpack -G DEB

# build/memdiag-hook-<version>.gem (worker-hook/ruby/build-gem)
gem: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) --target gem

demo: deps
	$(MAKE) build
	./conf/demo/run-demo $(BUILD)

bench: build
	@for b in tests/bench/*; do [ -x "$$b" ] && { echo "== $$b"; BUILD=$(BUILD) "$$b" || exit 1; }; done

# The unit and integration tests on a sanitizer build of the whole tree, in
# build-asan (ASan + UBSan) or build-tsan; see tests/sanitize/check.
check-asan: deps
	JOBS=$(JOBS) tests/sanitize/check asan

check-tsan: deps
	JOBS=$(JOBS) tests/sanitize/check tsan

# libFuzzer campaigns over every target in tests/fuzz (clang, ASan+UBSan),
# FUZZ_SECONDS each, in their own build directory; findings and logs under
# $(FUZZ_BUILD)/fuzz/<target>/. The committed corpus is replayed by ctest.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60

fuzz:
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DMEMDIAG_FUZZ=ON \
	  -DMEMDIAG_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_all
	tests/fuzz/run $(FUZZ_BUILD) $(FUZZ_SECONDS)

# Every C file in one style (.clang-format); check-format fails on a file
# that does not conform, naming it.
C_SOURCES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)

format:
	clang-format -i $(C_SOURCES)

check-format:
	@clang-format --dry-run --Werror $(C_SOURCES)

clean:
	rm -rf $(BUILD)
