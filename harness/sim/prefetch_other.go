//go:build !amd64

package sim

func prefetch(uintptr) {}

func prefetchLines(uintptr, int) {}
