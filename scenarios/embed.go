// Package scenarios holds sidebench's shipped scenario files. It has no
// logic beyond embedding them; harness/scenario loads them (for `base:`).
package scenarios

import "embed"

// FS holds every shipped scenario file (NAME.yaml).
//
//go:embed *.yaml
var FS embed.FS
