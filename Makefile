# stackpulse: one non-recursive Makefile for the library, the tools, the
# test workloads, the fuzz harnesses and the documents.
#
#   make            build everything into $(BUILD)
#   make check      install missing packages, build, run every test
#   make demo       install missing packages, build, profile a workload
#   make san        the same build with AddressSanitizer + UBSan
#   make fuzz       run every fuzz harness for FUZZ_TIME seconds each
#   make bench      measure stackpulse against perf (scripts/bench)
#   make install    PREFIX (default /usr/local) and DESTDIR honoured

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=
BUILD ?= build
FUZZ_TIME ?= 60
VERSION := 0.1.0

CC ?= cc
CFLAGS ?= -O2 -g
PKGS := libdw libelf libunwind msgpack zlib libdebuginfod
# Evaluated when a recipe runs, so after `make deps` has installed them.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS))

SP_CFLAGS = -std=gnu11 -Wall -Wextra -Wshadow -Wno-sign-compare \
	-Wno-missing-field-initializers -D_GNU_SOURCE \
	-DSP_VERSION='"$(VERSION)"' -Ilibcommon $(PKG_CFLAGS)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
ifeq ($(SAN),1)
CFLAGS := -O1 -g $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
endif

LIB_SRC := $(wildcard libcommon/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB := $(BUILD)/libcommon.a
TOOLS := $(patsubst tools/%.c,%,$(wildcard tools/sp-*.c))
TOOL_BIN := $(TOOLS:%=$(BUILD)/bin/%)
WORKLOAD_SRC := $(wildcard tests/workloads/*.c)
WORKLOAD_CXX := $(wildcard tests/workloads/*.cpp)
WORKLOADS := $(WORKLOAD_SRC:tests/workloads/%.c=$(BUILD)/workloads/%) \
	$(WORKLOAD_CXX:tests/workloads/%.cpp=$(BUILD)/workloads/%)
MAN1 := $(wildcard man/*.1)
MAN5 := $(BUILD)/man/sp-stream.5
FUZZ_SRC := $(wildcard fuzz/fuzz-*.c)
FUZZERS := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)

.PHONY: all deps check test demo bench san fuzz fuzz-build install clean

all: $(TOOL_BIN) $(WORKLOADS) $(MAN5)

deps:
	@scripts/deps

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(SP_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/bin/%: $(BUILD)/tools/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -liberty -lm

# Test workloads: -O2 without frame pointers, so stacks need DWARF CFI.
$(BUILD)/workloads/%: tests/workloads/%.c tests/workloads/workload.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -fomit-frame-pointer -fdebug-prefix-map=$(CURDIR)=. -pthread -o $@ $< -lm

$(BUILD)/workloads/%: tests/workloads/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) -O2 -g -fomit-frame-pointer -fdebug-prefix-map=$(CURDIR)=. -pthread -o $@ $<

# sp-stream(5) is generated from the format's one source, format/sp-stream.md.
$(MAN5): format/sp-stream.md scripts/md2man
	@mkdir -p $(dir $@)
	scripts/md2man sp-stream 5 "$(VERSION)" < $< > $@

san: deps
	$(MAKE) BUILD=$(BUILD)/san SAN=1 all

# libFuzzer harnesses, linked with the library sources built by clang.
$(BUILD)/fuzz/%: fuzz/%.c $(LIB_SRC) $(wildcard libcommon/*.h)
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -D_GNU_SOURCE -DSP_VERSION='"$(VERSION)"' \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-Ilibcommon $(PKG_CFLAGS) -o $@ $< $(LIB_SRC) $(PKG_LIBS) -liberty -lm

fuzz-build: deps $(FUZZERS)

fuzz: fuzz-build
	@for f in $(FUZZERS); do \
		n=$${f##*/}; mkdir -p $(BUILD)/fuzz/corpus-$$n; \
		echo "fuzz: $$n for $(FUZZ_TIME)s"; \
		$$f -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/$$n- \
			$(BUILD)/fuzz/corpus-$$n fuzz/corpus/$$n || exit 1; \
	done

check: deps all san fuzz-build
	scripts/run-tests

test: all
	scripts/run-tests --quick

demo: deps all
	scripts/demo $(BUILD)

# The benchmark against perf (BENCH_ARGS=--quick for a short run).
bench: deps all
	BUILD=$(BUILD) scripts/bench $(BENCH_ARGS)

install: $(TOOL_BIN) $(MAN5)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5
	install -m 755 $(TOOL_BIN) $(DESTDIR)$(BINDIR)/
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
