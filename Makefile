# stackpulse: one non-recursive Makefile for the library, the tools, the
# test workloads, the unit tests, the fuzz harnesses and the documents.
#
#   make deps         install the Debian packages the build needs
#   make test-deps    install what the tests need besides (perf, bats, ...)
#   make              build everything into $(BUILD)
#   make check        build, then run every test (bats, unit, sanitizers, fuzz)
#   make demo         build, profile a bundled workload, show the result
#   make check-layers fail when a library layer includes a layer above it
#   make san          the same build with AddressSanitizer + UBSan
#   make fuzz         run every fuzz harness for FUZZ_TIME seconds each
#   make bench        measure stackpulse against perf (scripts/bench)
#   make install      PREFIX (default /usr/local) and DESTDIR honoured
#
# The README's commands chain the installs: `make deps demo` and
# `make test-deps check`.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=
BUILD ?= build
FUZZ_TIME ?= 60
VERSION := 0.1.0

CC ?= cc
CFLAGS ?= -O2 -g
PKGS := libdw libelf msgpack zlib libdebuginfod
# pkg-config runs once, the first time a recipe needs its answer (so after
# `make deps` has installed the packages, when both are goals of one run).
PKG_ALL = $(eval PKG_ALL := $(shell pkg-config --cflags --libs $(PKGS)))$(PKG_ALL)
PKG_CFLAGS = $(filter-out -l% -L% -Wl%,$(PKG_ALL))
PKG_LIBS = $(filter -l% -L% -Wl%,$(PKG_ALL))

SP_CFLAGS = -std=gnu11 -Iinclude -Wall -Wextra -Wshadow -Wno-sign-compare \
	-Wno-missing-field-initializers -D_GNU_SOURCE \
	-DSP_VERSION='"$(VERSION)"' -Ilibcommon -Itools -I$(BUILD)/gen $(PKG_CFLAGS)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
ifeq ($(SAN),1)
CFLAGS += $(SAN_FLAGS)
LDFLAGS += $(SAN_FLAGS)
endif

.DELETE_ON_ERROR:
# Object files are kept, so `make install` after `make` compiles nothing.
.SECONDARY:

# The library's layers, lowest first.  A layer may include headers of the
# layers before it in this list and of its own, never of a layer after it
# (make check-layers).  Each is an archive of its own.
LAYERS := util stream capture unwind sym fold
layer_src = $(wildcard libcommon/$(1)/*.c libcommon/$(1)/*/*.c)
layer_lib = $(BUILD)/lib/libsp-$(1).a
LIB_SRC := $(foreach l,$(LAYERS),$(call layer_src,$(l)))

# The layers each tool links, highest first (the order the linker wants).
sp-capture_LAYERS := capture stream util
sp-cat_LAYERS := stream util
sp-unwind_LAYERS := unwind stream util
sp-symbolize_LAYERS := sym unwind stream util
sp-fold_LAYERS := fold stream util
sp-stat_LAYERS := stream util
sp-flame_LAYERS := fold stream util
sp-top_LAYERS := fold stream util
# Libraries outside the project that only some tools need.  libunwind
# (sp-unwind --engine=libunwind) is asked of pkg-config once, when a
# recipe needs it, as PKG_ALL is; the $$ keeps it out of the rules' eval.
LU_ALL = $(eval LU_ALL := $(shell pkg-config --cflags --libs libunwind-generic))$(LU_ALL)
LU_CFLAGS = $(filter-out -l% -L% -Wl%,$(LU_ALL))
LU_LIBS = $(filter -l% -L% -Wl%,$(LU_ALL))
sp-unwind_LIBS := $$(LU_LIBS)
sp-symbolize_LIBS := -liberty
sp-fold_LIBS := -lm
# sp-top's screen; ncurses is asked of pkg-config when a recipe needs it.
NC_LIBS = $(eval NC_LIBS := $(shell pkg-config --libs ncursesw))$(NC_LIBS)
sp-top_LIBS := $$(NC_LIBS) -lpthread -lm
sp-flame_LIBS := -lm

TOOLS := $(patsubst tools/%.c,%,$(wildcard tools/sp-*.c))
TOOL_BIN := $(TOOLS:%=$(BUILD)/bin/%)
TOOL_SUPPORT := $(BUILD)/tools/tool.o
WORKLOAD_SRC := $(wildcard tests/workloads/*.c)
WORKLOAD_CXX := $(wildcard tests/workloads/*.cpp)
WORKLOADS := $(WORKLOAD_SRC:tests/workloads/%.c=$(BUILD)/workloads/%) \
	$(WORKLOAD_CXX:tests/workloads/%.cpp=$(BUILD)/workloads/%)
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_BIN := $(if $(UNIT_SRC),$(BUILD)/unit/sp-unit)
# Small drivers the bats tests run against one part of the library.
TEST_DRIVERS := $(patsubst tests/lib/%.c,$(BUILD)/tests/%,$(wildcard tests/lib/*.c))
MAN1 := $(wildcard man/*.1)
MAN5 := $(BUILD)/man/sp-stream.5
FUZZ_SRC := $(wildcard fuzz/fuzz-*.c)
FUZZERS := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
# Files embedded in the library at build time (sp-flame's script and
# style): each becomes $(BUILD)/gen/<path>.h with one string constant.
EMBED_SRC := $(wildcard libcommon/*/*.js libcommon/*/*.css)
EMBED_GEN := $(EMBED_SRC:libcommon/%=$(BUILD)/gen/%.h)

.PHONY: all deps test-deps check check-layers test demo bench san fuzz \
	fuzz-build install uninstall clean

all: $(TOOL_BIN) $(WORKLOADS) $(UNIT_BIN) $(TEST_DRIVERS) $(MAN5)

deps:
	@scripts/deps build

test-deps: deps
	@scripts/deps test

$(BUILD)/gen/%.h: libcommon/% scripts/embed
	@mkdir -p $(dir $@)
	scripts/embed $< > $@

$(BUILD)/%.o: %.c | $(EMBED_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(SP_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/libcommon/unwind/libunwind.o: SP_CFLAGS += $(LU_CFLAGS)

define layer_rules
$(call layer_lib,$(1)): $(patsubst %.c,$(BUILD)/%.o,$(call layer_src,$(1)))
	@mkdir -p $$(dir $$@)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rules,$(l))))

define tool_rules
$(BUILD)/bin/$(1): $(BUILD)/tools/$(1).o $(TOOL_SUPPORT) $(foreach l,$($(1)_LAYERS),$(call layer_lib,$(l)))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(LDFLAGS) -Wl,--as-needed -o $$@ $$^ $$(PKG_LIBS) $($(1)_LIBS)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rules,$(t))))

# In-process unit tests of the library, one driver for all of them.
$(BUILD)/unit/sp-unit: $(UNIT_SRC:%.c=$(BUILD)/%.o) $(TOOL_SUPPORT) \
		$(foreach l,fold sym unwind capture stream util,$(call layer_lib,$(l)))
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -liberty -lm

$(TEST_DRIVERS): $(BUILD)/tests/%: $(BUILD)/tests/lib/%.o $(call layer_lib,sym) $(call layer_lib,unwind) \
	$(call layer_lib,util)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

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

check-layers:
	@scripts/check-layers $(LAYERS)

san:
	$(MAKE) BUILD=$(BUILD)/san SAN=1 all

# libFuzzer harnesses over the library compiled once by clang.
FUZZ_CFLAGS = -std=gnu11 -g -O1 -D_GNU_SOURCE -DSP_VERSION='"$(VERSION)"' \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
	-Iinclude -Ilibcommon -I$(BUILD)/gen $(PKG_CFLAGS)
FUZZ_OBJ := $(LIB_SRC:%.c=$(BUILD)/fuzz/obj/%.o)

$(BUILD)/fuzz/obj/%.o: %.c | $(EMBED_GEN)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/fuzz/libsp-fuzz.a: $(FUZZ_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/fuzz/%: fuzz/%.c $(BUILD)/fuzz/libsp-fuzz.a
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(PKG_LIBS) -liberty -lm

fuzz-build: $(FUZZERS)

fuzz: fuzz-build
	@for f in $(FUZZERS); do \
		n=$${f##*/}; mkdir -p $(BUILD)/fuzz/corpus-$$n; \
		echo "fuzz: $$n for $(FUZZ_TIME)s"; \
		$$f -max_total_time=$(FUZZ_TIME) -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/fuzz/$$n- \
			$(BUILD)/fuzz/corpus-$$n fuzz/corpus/$$n || exit 1; \
	done

check: all check-layers san fuzz-build
	scripts/run-tests

test: all
	scripts/run-tests --quick

demo: all
	scripts/demo $(BUILD)

# The benchmark against perf (BENCH_ARGS=--quick for a short run).
bench: all
	BUILD=$(BUILD) scripts/bench $(BENCH_ARGS)

install: $(TOOL_BIN) $(MAN5)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5
	install -m 755 $(TOOL_BIN) $(DESTDIR)$(BINDIR)/
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/

uninstall:
	rm -f $(TOOLS:%=$(DESTDIR)$(BINDIR)/%) \
		$(MAN1:man/%=$(DESTDIR)$(MANDIR)/man1/%) \
		$(DESTDIR)$(MANDIR)/man5/sp-stream.5

clean:
	rm -rf $(BUILD)

# Header dependencies, written as a side effect of compiling (-MMD -MP).
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
