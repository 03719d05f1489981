// Package version identifies the sidebench build: the module version, the
// VCS revision and whether the tree was modified, from the Go build info
// (`go build` stamps them when building inside the git checkout; the
// Makefile passes -buildvcs=auto so that a GOFLAGS=-buildvcs=false
// environment does not drop them). Every output that records a result
// (run.json, summary.json, junit.xml, the report header, `sidebench
// version`) carries it, so a nightly result can be tied to a build.
package version

import (
	"runtime/debug"
	"strings"
	"sync"
)

// Override is the version set with -ldflags "-X
// github.com/sidebench/sidebench/internal/version.Override=v1.2.3"; it wins
// over the module version.
var Override = ""

// Info is a build's identity.
type Info struct {
	// Version is the module version ("v0.0.0-20261130043412-c4219a82443d"
	// for an untagged commit), or "dev" when the build info has none
	// (go test, go run, -buildvcs=false).
	Version string `json:"version"`
	// Revision is the VCS commit, Modified whether the tree had local
	// changes; both empty/false when not stamped.
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// GoVersion is the toolchain that built the binary.
	GoVersion string `json:"goVersion,omitempty"`
}

var (
	once sync.Once
	info Info
)

// Get returns the running binary's identity.
func Get() Info {
	once.Do(func() { info = fromBuildInfo(debug.ReadBuildInfo()) })
	return info
}

func fromBuildInfo(bi *debug.BuildInfo, ok bool) Info {
	out := Info{Version: "dev"}
	if ok && bi != nil {
		out.GoVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			out.Version = strings.TrimSuffix(v, "+dirty")
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				out.Revision = s.Value
			case "vcs.modified":
				out.Modified = s.Value == "true"
			}
		}
	}
	if Override != "" {
		out.Version = Override
	}
	return out
}

// String is the one-line form: "v0.0.0-…-c4219a82443d (c4219a82443d, modified)".
func (i Info) String() string {
	s := i.Version
	if i.Revision != "" {
		r := i.Revision
		if len(r) > 12 {
			r = r[:12]
		}
		s += " (" + r
		if i.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s
}

// Short is the version alone, with "+dirty" when the tree was modified:
// the form written where one token fits (run.meta, PerfData labels).
func (i Info) Short() string {
	if i.Modified {
		return i.Version + "+dirty"
	}
	return i.Version
}
