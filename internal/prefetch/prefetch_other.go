//go:build !amd64

package prefetch

func Line(uintptr) {}

func Lines(uintptr, int) {}
