// gospin: CPU-bound Go, in the main goroutine and in two others:
// each runs work -> mix -> hot until SECONDS have passed.  go:noinline
// keeps every function a frame of its own.
//
// Usage: gospin [SECONDS]   (default 2)
package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

//go:noinline
func hot(n int, h uint64) uint64 {
	for i := 0; i < n; i++ {
		h = (h ^ uint64(i)) * 1099511628211
	}
	return h
}

//go:noinline
func mix(n int, h uint64) uint64 {
	return hot(n, h) + 1
}

//go:noinline
func work(deadline time.Time) uint64 {
	var h uint64 = 1469598103934665603
	for time.Now().Before(deadline) {
		h = mix(100000, h)
	}
	return h
}

func main() {
	seconds := 2.0
	if len(os.Args) > 1 {
		s, err := strconv.ParseFloat(os.Args[1], 64)
		if err != nil || !(s >= 0) {
			fmt.Fprintln(os.Stderr, "usage: gospin [SECONDS]")
			os.Exit(3)
		}
		seconds = s
	}
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var wg sync.WaitGroup
	sums := make([]uint64, 3)
	for g := 1; g < len(sums); g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			sums[g] = work(deadline)
		}(g)
	}
	sums[0] = work(deadline)
	wg.Wait()
	fmt.Println("gospin:", sums[0]^sums[1]^sums[2])
}
// SPDX-License-Identifier: MIT
