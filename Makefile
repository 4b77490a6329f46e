# SPDX-License-Identifier: MIT
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
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share/stackpulse
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
DESTDIR ?=
BUILD ?= build
FUZZ_TIME ?= 60
VERSION := 0.1.0
# The date the man pages carry (.TH): the day their text last changed.
MAN_DATE := 2026-12-02

CC ?= cc
CFLAGS ?= -O2 -g
# libdebuginfod is not linked: its header only, the library is loaded
# the first time a file is asked of a server (libcommon/sym/debuginfod.c).
PKGS := libdw libelf msgpack zlib nettle libzstd libdeflate
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
LAYERS := util stream capture unwind sym fold api
layer_src = $(wildcard libcommon/$(1)/*.c libcommon/$(1)/*/*.c)
layer_lib = $(BUILD)/lib/libsp-$(1).a
LIB_SRC := $(foreach l,$(LAYERS),$(call layer_src,$(l)))

# The layers each tool links, highest first (the order the linker wants).
sp-capture_LAYERS := api unwind capture stream util
sp-cat_LAYERS := stream util
sp-unwind_LAYERS := unwind stream util
sp-symbolize_LAYERS := api sym unwind capture stream util
sp-fold_LAYERS := fold stream util
sp-stat_LAYERS := stream util
sp-flame_LAYERS := fold stream util
sp-top_LAYERS := fold stream util
sp-import_LAYERS := capture stream util
# Libraries outside the project that only some tools need.  libunwind
# (sp-unwind --engine=libunwind) is asked of pkg-config once, when a
# recipe needs it, as PKG_ALL is; the $$ keeps it out of the rules' eval.
LU_ALL = $(eval LU_ALL := $(shell pkg-config --cflags --libs libunwind-generic))$(LU_ALL)
LU_CFLAGS = $(filter-out -l% -L% -Wl%,$(LU_ALL))
LU_LIBS = $(filter -l% -L% -Wl%,$(LU_ALL))
sp-unwind_LIBS := $$(LU_LIBS)
sp-symbolize_LIBS := -liberty -lpthread
sp-fold_LIBS := -lm
# sp-top's screen; ncurses is asked of pkg-config when a recipe needs it.
NC_LIBS = $(eval NC_LIBS := $(shell pkg-config --libs ncursesw))$(NC_LIBS)
sp-top_LIBS := $$(NC_LIBS) -lpthread -lm
sp-flame_LIBS := -lm
sp-capture_LIBS := -lpthread

TOOLS := $(patsubst tools/%.c,%,$(wildcard tools/sp-*.c))
TOOL_BIN := $(TOOLS:%=$(BUILD)/bin/%)
TOOL_SUPPORT := $(BUILD)/tools/tool.o
WORKLOAD_SRC := $(wildcard tests/workloads/*.c)
WORKLOAD_CXX := $(wildcard tests/workloads/*.cpp)
WORKLOADS := $(WORKLOAD_SRC:tests/workloads/%.c=$(BUILD)/workloads/%) \
	$(WORKLOAD_CXX:tests/workloads/%.cpp=$(BUILD)/workloads/%) \
	$(BUILD)/workloads/deep-fp $(BUILD)/workloads/spin-fp
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_BIN := $(if $(UNIT_SRC),$(BUILD)/unit/sp-unit)
# Small drivers the bats tests run against one part of the library.
TEST_DRIVERS := $(patsubst tests/lib/%.c,$(BUILD)/tests/%,$(filter-out tests/lib/api-%.c,$(wildcard tests/lib/*.c)))
# Test programs of the public API (tests/lib/api-*.c), linked as examples are.
API_TESTS := $(patsubst tests/lib/%.c,$(BUILD)/tests/%,$(wildcard tests/lib/api-*.c))
MAN1 := $(wildcard man/*.1)
MAN3 := $(wildcard man/*.3)
MAN5 := $(BUILD)/man/sp-stream.5
FUZZ_SRC := $(wildcard fuzz/fuzz-*.c)
FUZZERS := $(FUZZ_SRC:fuzz/%.c=$(BUILD)/fuzz/%)
# Files embedded in the library at build time (sp-flame's script and
# style): each becomes $(BUILD)/gen/<path>.h with one string constant.
EMBED_SRC := $(wildcard libcommon/*/*.js libcommon/*/*.css)
EMBED_GEN := $(EMBED_SRC:libcommon/%=$(BUILD)/gen/%.h)

.PHONY: all deps test-deps check check-layers test soak demo bench san fuzz \
	fuzz-build tools install-tools install uninstall deb clean

all: $(TOOL_BIN) $(WORKLOADS) $(UNIT_BIN) $(TEST_DRIVERS) $(MAN5)

deps:
	@scripts/deps build

test-deps: deps
	@scripts/deps test

# The commit built, for --version: build/gen/commit.h is rewritten, as the
# Makefile is read, only when the commit (or whether the tree has changes)
# differs from what it holds, so a build of the same tree compiles nothing
# (make install after make, and make -n, show no compiling).
COMMIT_GEN := $(BUILD)/gen/commit.h
COMMIT_NOW := $(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) || c=unknown; \
	[ "$$c" = unknown ] || git diff --quiet HEAD -- 2>/dev/null || c=$$c-modified; echo $$c)
COMMIT_LINE := \#define SP_COMMIT "$(COMMIT_NOW)"
ifneq ($(shell cat $(COMMIT_GEN) 2>/dev/null),$(COMMIT_LINE))
$(shell mkdir -p $(BUILD)/gen && printf '%s\n' '$(COMMIT_LINE)' > $(COMMIT_GEN))
endif
$(BUILD)/tools/tool.o: $(COMMIT_GEN)

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

# libstackpulse, the public library (include/stackpulse.h): the layers
# under the tools but fold, as a shared library, whose objects are built
# position-independent with hidden visibility so that it exports what the
# header declares and libstackpulse.map lists, and as a static one.
LIB_LAYERS := api sym unwind capture stream util
LIB_OBJ := $(foreach l,$(LIB_LAYERS),$(patsubst %.c,%.o,$(call layer_src,$(l))))
LIB_MAJOR := $(firstword $(subst ., ,$(VERSION)))
LIB_SO := $(BUILD)/lib/libstackpulse.so.$(VERSION)
LIB_A := $(BUILD)/lib/libstackpulse.a
LIB_MAP := libcommon/api/libstackpulse.map
LIB_PC := $(BUILD)/lib/pkgconfig/stackpulse.pc
LIB_ALL := $(LIB_SO) $(LIB_A) $(LIB_PC)
LIB_DEPS := libdw libelf msgpack zlib nettle libzstd libdeflate libunwind-generic
# A sanitized shared library leaves the sanitizer's symbols to the program.
LIB_NO_UNDEFINED := $(if $(filter 1,$(SAN)),,-Wl,--no-undefined)

$(BUILD)/pic/%.o: %.c | $(EMBED_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(SP_CFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(BUILD)/pic/libcommon/unwind/libunwind.o: SP_CFLAGS += $(LU_CFLAGS)

$(LIB_SO): $(LIB_OBJ:%=$(BUILD)/pic/%) $(LIB_MAP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libstackpulse.so.$(LIB_MAJOR) \
		-Wl,--version-script=$(LIB_MAP) $(LIB_NO_UNDEFINED) -Wl,--as-needed \
		-o $@ $(filter %.o,$^) $(PKG_LIBS) $(LU_LIBS) -liberty -lpthread
	ln -sf $(notdir $@) $(BUILD)/lib/libstackpulse.so.$(LIB_MAJOR)
	ln -sf libstackpulse.so.$(LIB_MAJOR) $(BUILD)/lib/libstackpulse.so

$(LIB_A): $(LIB_OBJ:%=$(BUILD)/%)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^

# stackpulse.pc for pkg-config, written for PREFIX (make install writes
# it again for the PREFIX it installs into).
define LIB_PC_TEXT
prefix=$(PREFIX)
libdir=$(LIBDIR)
includedir=$(INCLUDEDIR)

Name: stackpulse
Description: sampling profiler library: record, unwind and symbolize stacks
Version: $(VERSION)
Requires.private: $(LIB_DEPS)
Cflags: -I$${includedir}
Libs: -L$${libdir} -lstackpulse
Libs.private: -liberty -lpthread
endef
export LIB_PC_TEXT

$(LIB_PC): Makefile
	@mkdir -p $(dir $@)
	printf '%s\n' "$$LIB_PC_TEXT" > $@

# The recipes of the library in C (examples/*.c), linked against the
# shared library as a user's program would be, run by the tests.
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))

$(BUILD)/examples/%: examples/%.c $(LIB_SO) include/stackpulse.h include/stackpulse/errors.h
	@mkdir -p $(dir $@)
	$(CC) -std=c99 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude $(CFLAGS) $(LDFLAGS) -o $@ $< \
		-L$(BUILD)/lib -lstackpulse -Wl,-rpath,'$$ORIGIN/../lib'

$(BUILD)/tests/api-%: tests/lib/api-%.c $(LIB_SO) include/stackpulse.h include/stackpulse/errors.h
	@mkdir -p $(dir $@)
	$(CC) -std=c99 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude $(CFLAGS) $(LDFLAGS) -o $@ $< \
		-L$(BUILD)/lib -lstackpulse -Wl,-rpath,'$$ORIGIN/../lib'

all: $(LIB_ALL) $(EXAMPLES) $(API_TESTS)

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

# deep and spin again with frame pointers, leaf functions' too, for
# --call-graph fp (spin-fp reports the work it did, for scripts/bench).
$(BUILD)/workloads/deep-fp $(BUILD)/workloads/spin-fp: $(BUILD)/workloads/%-fp: \
		tests/workloads/%.c tests/workloads/workload.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		-fdebug-prefix-map=$(CURDIR)=. -pthread -o $@ $< -lm

$(BUILD)/workloads/%: tests/workloads/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) -O2 -g -fomit-frame-pointer -fdebug-prefix-map=$(CURDIR)=. -pthread -o $@ $<

# sp-stream(5) is generated from the format's one source, format/sp-stream.md.
$(MAN5): format/sp-stream.md scripts/md2man
	@mkdir -p $(dir $@)
	MD2MAN_DATE=$(MAN_DATE) scripts/md2man sp-stream 5 "$(VERSION)" < $< > $@

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

# The suite's races and load run longer: the follow examples 100 times
# each way, the maximum-rate load for 120 s.
soak: all
	SP_SOAK_REPEAT=100 SP_LOAD_SECONDS=120 scripts/run-tests --quick \
		tests/029-live.bats tests/090-faults.bats

demo: all
	scripts/demo $(BUILD)

# The benchmark against perf (BENCH_ARGS=--quick for a short run).
bench: all
	BUILD=$(BUILD) scripts/bench $(BENCH_ARGS)

# The tools with their man pages, the stream's page, the Python reader and
# the completion (what the Debian package holds); install adds the library.
tools: $(TOOL_BIN) $(MAN5)

install-tools: tools
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(DATADIR) $(DESTDIR)$(COMPLETIONDIR)
	install -m 755 $(TOOL_BIN) $(DESTDIR)$(BINDIR)/
	for t in $(TOOLS); do install -m 644 completion/stackpulse.bash $(DESTDIR)$(COMPLETIONDIR)/$$t; done
	install -m 644 format/sp_stream.py $(DESTDIR)$(DATADIR)/
	install -m 644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	install -m 644 $(MAN5) $(DESTDIR)$(MANDIR)/man5/

install: install-tools $(LIB_SO) $(LIB_A)
	install -d $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/stackpulse
	$(if $(MAN3),install -m 644 $(MAN3) $(DESTDIR)$(MANDIR)/man3/)
	install -m 644 include/stackpulse.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 include/stackpulse/errors.h $(DESTDIR)$(INCLUDEDIR)/stackpulse/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_SO)) $(DESTDIR)$(LIBDIR)/libstackpulse.so.$(LIB_MAJOR)
	ln -sf libstackpulse.so.$(LIB_MAJOR) $(DESTDIR)$(LIBDIR)/libstackpulse.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	printf '%s\n' "$$LIB_PC_TEXT" > $(DESTDIR)$(LIBDIR)/pkgconfig/stackpulse.pc

# The Debian package, built by dpkg-buildpackage from a copy of the tracked
# files in $(BUILD)/deb (make test-deps installs what it needs), then
# checked by lintian: $(BUILD)/deb/stackpulse_$(VERSION)_ARCH.deb.
deb:
	rm -rf $(BUILD)/deb
	mkdir -p $(BUILD)/deb/stackpulse-$(VERSION)
	git ls-files -z | tar --null -T - -cf - | tar -xf - -C $(BUILD)/deb/stackpulse-$(VERSION)
	cd $(BUILD)/deb/stackpulse-$(VERSION) && \
		env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES dpkg-buildpackage -b -us -uc
	lintian --fail-on error $(BUILD)/deb/stackpulse_$(VERSION)_*.deb

uninstall:
	rm -f $(TOOLS:%=$(DESTDIR)$(BINDIR)/%) \
		$(MAN1:man/%=$(DESTDIR)$(MANDIR)/man1/%) \
		$(MAN3:man/%=$(DESTDIR)$(MANDIR)/man3/%) \
		$(DESTDIR)$(MANDIR)/man5/sp-stream.5 \
		$(DESTDIR)$(INCLUDEDIR)/stackpulse.h $(DESTDIR)$(INCLUDEDIR)/stackpulse/errors.h \
		$(DESTDIR)$(LIBDIR)/libstackpulse.so* $(DESTDIR)$(LIBDIR)/libstackpulse.a \
		$(DESTDIR)$(LIBDIR)/pkgconfig/stackpulse.pc $(DESTDIR)$(DATADIR)/sp_stream.py \
		$(TOOLS:%=$(DESTDIR)$(COMPLETIONDIR)/%)
	-rmdir $(DESTDIR)$(INCLUDEDIR)/stackpulse $(DESTDIR)$(DATADIR)

clean:
	rm -rf $(BUILD)

# Header dependencies, written as a side effect of compiling (-MMD -MP).
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
