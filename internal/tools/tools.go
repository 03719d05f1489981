//go:build tools

// Package tools pins the dependencies the design card fixes, so that go.mod
// lists them even before every gate package imports them.
package tools

import (
	_ "github.com/spf13/cobra"
	_ "github.com/vbauerster/mpb/v8"
	_ "golang.org/x/term"
	_ "gonum.org/v1/gonum/stat"
	_ "gonum.org/v1/gonum/stat/distuv"
	_ "gonum.org/v1/plot"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "sigs.k8s.io/yaml"
)
