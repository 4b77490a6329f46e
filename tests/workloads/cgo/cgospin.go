// cgospin: Go code that calls a little C through cgo until SECONDS (the
// first argument, default 2) have passed: gowork -> gohot in Go, and
// gowork -> c_mix in C.  go:noinline keeps the Go functions frames.

package main

/*
#include <stdint.h>
static uint64_t c_mix(uint64_t h, int n) {
	for (int i = 0; i < n; i++)
		h = (h ^ (uint64_t)i) * 1099511628211u;
	return h;
}
*/
import "C"

import (
	"os"
	"strconv"
	"time"
)

//go:noinline
func gohot(n int, h uint64) uint64 {
	for i := 0; i < n; i++ {
		h = (h ^ uint64(i)) * 1099511628211
	}
	return h
}

//go:noinline
func gowork(deadline time.Time) uint64 {
	var h uint64 = 1
	for time.Now().Before(deadline) {
		h = gohot(200000, h)
		h = uint64(C.c_mix(C.uint64_t(h), 1000))
	}
	return h
}

func main() {
	s := 2.0
	if len(os.Args) > 1 {
		s, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	gowork(time.Now().Add(time.Duration(s * float64(time.Second))))
}
// SPDX-License-Identifier: MIT
