// goinline: a hot loop in outer, which Go inlines middle and small into:
// with inline frames a sample reads main.outer -> main.middle ->
// main.small.  Runs until SECONDS (the first argument, default 2) pass.
package main

import (
	"os"
	"strconv"
	"time"
)

func small(x uint64) uint64 {
	return x*6364136223846793005 + 1442695040888963407
}

func middle(x uint64) uint64 {
	return small(x^0x9e3779b97f4a7c15) >> 1
}

//go:noinline
func outer(n int, h uint64) uint64 {
	for i := 0; i < n; i++ {
		h = middle(h + uint64(i))
	}
	return h
}

func main() {
	s := 2.0
	if len(os.Args) > 1 {
		s, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	end := time.Now().Add(time.Duration(s * float64(time.Second)))
	var h uint64
	for time.Now().Before(end) {
		h = outer(100000, h)
	}
	os.Exit(int(h & 0))
}
// SPDX-License-Identifier: MIT
